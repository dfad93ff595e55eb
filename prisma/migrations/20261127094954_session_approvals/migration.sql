-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "turn_paused_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "session_approvals" (
    "session_id" TEXT NOT NULL,
    "tool_use_id" TEXT NOT NULL,
    "tool_name" TEXT NOT NULL,
    "position" INTEGER NOT NULL DEFAULT 0,
    "input" JSONB NOT NULL,
    "like_key" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "scope" TEXT,
    "decided_by" TEXT,
    "requested_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "decided_at" TIMESTAMPTZ(3),

    CONSTRAINT "session_approvals_pkey" PRIMARY KEY ("session_id","tool_use_id")
);

-- CreateIndex
CREATE INDEX "session_approvals_session_id_status_idx" ON "session_approvals"("session_id", "status");

-- AddForeignKey
ALTER TABLE "session_approvals" ADD CONSTRAINT "session_approvals_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
