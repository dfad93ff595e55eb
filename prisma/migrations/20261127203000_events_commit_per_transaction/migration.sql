-- The commit trigger numbers a transaction's events together. It still fires once per event (a
-- constraint trigger is per row), but the first to run takes the lock once, numbers every
-- provisional event the transaction stored (in insertion order), fans each out to webhooks and
-- sends one notification, the highest id; the others find their event already numbered and
-- return. A turn stores about eleven events in six transactions: eleven lock calls and
-- notifications became six.
--
-- The transaction's own provisional events are the rows with a negative id it can see: every
-- transaction numbers its events before it commits, so no committed row keeps a negative id, and
-- another transaction's uncommitted rows are invisible. Its first event's is the highest of them.
CREATE OR REPLACE FUNCTION "events_commit_order"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  provisional bigint;
  ev "events"%ROWTYPE;
BEGIN
  PERFORM 1 FROM "events" WHERE "id" = NEW."id";
  IF NOT FOUND THEN
    RETURN NULL; -- numbered already, with the rest of its transaction's events
  END IF;
  -- Held to the end of the transaction: ids drawn after this become visible after this one's.
  PERFORM pg_advisory_xact_lock(1634755958); -- 0x61706576, "apev"
  -- From this event down, in insertion order (-5 before -6): it is the transaction's first, as
  -- triggers fire in insertion order, and provisional ids only fall, so the scan meets only ids
  -- drawn since. One row at a time, each by its key: a join would plan a scan of the table; and
  -- `id < 0` keeps the generic plan on the index (`id <= $1` alone is a third of the table to it).
  FOR provisional IN SELECT "id" FROM "events" WHERE "id" < 0 AND "id" <= NEW."id" ORDER BY "id" DESC LOOP
    UPDATE "events" SET "id" = nextval('events_id_seq') WHERE "id" = provisional RETURNING * INTO ev;
    -- Every stored organization event becomes one delivery per enabled endpoint of its organization
    -- subscribed to its type, in the transaction that stores the event. The body is the Standard
    -- Webhooks payload (`type`, `timestamp`, `data`), fixed here so every attempt sends the same bytes.
    INSERT INTO "webhook_deliveries" ("id", "endpoint_id", "event_id", "event_type", "payload", "status", "next_attempt_at", "created_at", "updated_at")
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), w."id", ev."id", ev."type",
           jsonb_build_object(
             'type', ev."type",
             'timestamp', to_char(ev."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'data', ev."data" || jsonb_strip_nulls(jsonb_build_object(
               'eventId', ev."id"::text, 'organizationId', ev."organization_id",
               'sessionId', ev."session_id", 'computerId', ev."computer_id"))
           )::text,
           'pending', ev."created_at", ev."created_at", ev."created_at"
    FROM "webhook_endpoints" w
    WHERE w."organization_id" = ev."organization_id" AND w."status" = 'enabled' AND ev."type" = ANY (w."event_types");
  END LOOP;
  -- A replica told of the highest id reads every event up to it.
  PERFORM pg_notify('agentplane_events', ev."id"::text);
  RETURN NULL;
END $$;
