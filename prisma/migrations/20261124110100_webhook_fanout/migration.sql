-- Every stored organization event becomes one delivery per enabled endpoint of its organization
-- subscribed to its type, in the transaction that stores the event: whoever publishes an event,
-- its webhooks cannot be lost between the change and their queueing. The body is the Standard
-- Webhooks payload (`type`, `timestamp`, `data`), fixed here so every attempt and redelivery
-- sends the same signed bytes.
CREATE FUNCTION "webhook_fanout"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "webhook_deliveries" ("id", "endpoint_id", "event_id", "event_type", "payload", "status", "next_attempt_at", "created_at", "updated_at")
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), w."id", NEW."id", NEW."type",
         jsonb_build_object(
           'type', NEW."type",
           'timestamp', to_char(NEW."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'data', NEW."data" || jsonb_strip_nulls(jsonb_build_object(
             'eventId', NEW."id"::text, 'organizationId', NEW."organization_id",
             'sessionId', NEW."session_id", 'computerId', NEW."computer_id"))
         )::text,
         'pending', NEW."created_at", NEW."created_at", NEW."created_at"
  FROM "webhook_endpoints" w
  WHERE w."organization_id" = NEW."organization_id" AND w."status" = 'enabled' AND NEW."type" = ANY (w."event_types");
  RETURN NULL;
END $$;

CREATE TRIGGER "events_webhook_fanout" AFTER INSERT ON "events"
  FOR EACH ROW EXECUTE FUNCTION "webhook_fanout"();
-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");
