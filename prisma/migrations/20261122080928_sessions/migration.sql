-- CreateEnum
CREATE TYPE "SessionStatus" AS ENUM ('idle', 'pending', 'running');

-- CreateTable
CREATE TABLE "sessions" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "owner_kind" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "computer_id" TEXT NOT NULL,
    "parent_session_id" TEXT,
    "cwd" TEXT NOT NULL,
    "title" TEXT,
    "status" "SessionStatus" NOT NULL DEFAULT 'idle',
    "settings" JSONB NOT NULL DEFAULT '{}',
    "archived_at" TIMESTAMPTZ(3),
    "message_count" INTEGER NOT NULL DEFAULT 0,
    "assistant_active_ms" BIGINT NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_creation_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_read_tokens" BIGINT NOT NULL DEFAULT 0,
    "thinking_tokens" BIGINT NOT NULL DEFAULT 0,
    "service_credits" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "incl_input_tokens" BIGINT NOT NULL DEFAULT 0,
    "incl_output_tokens" BIGINT NOT NULL DEFAULT 0,
    "incl_cache_creation_tokens" BIGINT NOT NULL DEFAULT 0,
    "incl_cache_read_tokens" BIGINT NOT NULL DEFAULT 0,
    "incl_thinking_tokens" BIGINT NOT NULL DEFAULT 0,
    "incl_service_credits" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "interrupt_requested_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),
    "purge_after" TIMESTAMPTZ(3),

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_messages" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "session_id" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "content" JSONB NOT NULL,
    "queue_status" TEXT,
    "computer_id" TEXT,
    "parent_id" TEXT,
    "user_message_source" TEXT,
    "is_error" BOOLEAN,
    "model_id" TEXT,
    "reasoning_effort" TEXT,
    "extra" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "session_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "git_ai_checkpoints" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "commit_sha" TEXT NOT NULL,
    "base_sha" TEXT,
    "branch" TEXT,
    "is_default_branch" BOOLEAN,
    "repo_url" TEXT,
    "repo_name" TEXT,
    "agent_version" TEXT,
    "kind" TEXT NOT NULL,
    "author" TEXT,
    "timestamp_ms" BIGINT,
    "additions" INTEGER NOT NULL DEFAULT 0,
    "deletions" INTEGER NOT NULL DEFAULT 0,
    "additions_sloc" INTEGER NOT NULL DEFAULT 0,
    "deletions_sloc" INTEGER NOT NULL DEFAULT 0,
    "body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "git_ai_checkpoints_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sessions_organization_id_owner_kind_owner_id_created_at_idx" ON "sessions"("organization_id", "owner_kind", "owner_id", "created_at");

-- CreateIndex
CREATE INDEX "sessions_parent_session_id_idx" ON "sessions"("parent_session_id");

-- CreateIndex
CREATE INDEX "sessions_purge_after_idx" ON "sessions"("purge_after");

-- CreateIndex
CREATE INDEX "session_messages_session_id_role_seq_idx" ON "session_messages"("session_id", "role", "seq");

-- CreateIndex
CREATE INDEX "session_messages_session_id_queue_status_seq_idx" ON "session_messages"("session_id", "queue_status", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "session_messages_session_id_seq_key" ON "session_messages"("session_id", "seq");

-- CreateIndex
CREATE INDEX "git_ai_checkpoints_session_id_commit_sha_idx" ON "git_ai_checkpoints"("session_id", "commit_sha");

-- AddForeignKey
ALTER TABLE "session_messages" ADD CONSTRAINT "session_messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "git_ai_checkpoints" ADD CONSTRAINT "git_ai_checkpoints_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
