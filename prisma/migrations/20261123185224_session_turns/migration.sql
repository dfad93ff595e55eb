-- AlterTable
ALTER TABLE "analytics_events" ADD COLUMN     "service_credits" DOUBLE PRECISION NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "turn_heartbeat_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "sessions_status_turn_heartbeat_at_idx" ON "sessions"("status", "turn_heartbeat_at");
