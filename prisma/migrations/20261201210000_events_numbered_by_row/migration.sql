-- The commit trigger numbers each event by itself again, by its key. The version before numbered a
-- transaction's events in its first invocation, finding them with a scan of the negative ids below
-- its own: that scan also met every provisional id drawn meanwhile by other transactions and the
-- dead versions the renumbering leaves until a vacuum, and it ran under the lock every transaction
-- storing events waits for (1.6 ms of a 2.7 ms hold under an agent-turn burst, 3.4 ms with two
-- replicas). Now the lock is taken by the first event's invocation and re-entered, free, by the
-- rest; each renumbers one row by its key. Each event notifies its id: a replica reads once for
-- the notifications of one commit (src/modules/events/hub.ts skips a read its cursor already covers).
CREATE OR REPLACE FUNCTION "events_commit_order"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ev "events"%ROWTYPE;
BEGIN
  -- Held to the end of the transaction: ids drawn after this become visible after this one's.
  -- Triggers fire in insertion order, so a transaction's events are numbered in that order.
  PERFORM pg_advisory_xact_lock(1634755958); -- 0x61706576, "apev"
  UPDATE "events" SET "id" = nextval('events_id_seq') WHERE "id" = NEW."id" RETURNING * INTO ev;
  IF NOT FOUND THEN
    RETURN NULL; -- deleted by its own transaction before the commit
  END IF;
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
  PERFORM pg_notify('agentplane_events', ev."id"::text);
  RETURN NULL;
END $$;
