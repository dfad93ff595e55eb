-- Event ids are drawn at commit, not at insert. Before, `publish` held one advisory lock from the
-- insert to the end of its transaction, so that ids became visible in increasing order; every
-- transaction that stored an event waited for every other one's remaining statements (a burst of
-- agent turns queued behind that one lock). Now an event is inserted with a provisional negative id
-- and a deferred trigger, run by COMMIT itself, takes the lock, gives each of the transaction's
-- events its final id in insertion order, fans it out to webhooks and notifies the replicas. The
-- lock is held for that trigger and the commit only: no round trip to a client holds it.
CREATE SEQUENCE "events_provisional_id_seq";

DROP TRIGGER "events_webhook_fanout" ON "events";
DROP FUNCTION "webhook_fanout"();

CREATE FUNCTION "events_commit_order"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ev "events"%ROWTYPE;
BEGIN
  -- Held to the end of the transaction: ids drawn after this become visible after this one's.
  PERFORM pg_advisory_xact_lock(1634755958); -- 0x61706576, "apev"
  UPDATE "events" SET "id" = nextval('events_id_seq') WHERE "id" = NEW."id" RETURNING * INTO ev;
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

CREATE CONSTRAINT TRIGGER "events_commit_order" AFTER INSERT ON "events"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "events_commit_order"();
