-- CreateTable
CREATE TABLE "analytics_events" (
    "id" BIGSERIAL NOT NULL,
    "organization_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "kind" TEXT NOT NULL,
    "session_id" TEXT,
    "client" TEXT,
    "model" TEXT,
    "model_tier" TEXT,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_read_tokens" BIGINT NOT NULL DEFAULT 0,
    "cache_write_tokens" BIGINT NOT NULL DEFAULT 0,
    "tool" TEXT,
    "mcp_server" TEXT,
    "autonomy_level" TEXT,
    "name" TEXT,
    "hook_event" TEXT,
    "hook_matcher" TEXT,
    "hook_command" TEXT,
    "role" TEXT,
    "extension" TEXT,
    "language" TEXT,

    CONSTRAINT "analytics_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "analytics_org_days" (
    "organization_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "rolled_up_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "daily_active_users" INTEGER NOT NULL,
    "weekly_active_users" INTEGER NOT NULL DEFAULT 0,
    "monthly_active_users" INTEGER NOT NULL DEFAULT 0,
    "tokens" JSONB NOT NULL,
    "tokens_by_user" JSONB NOT NULL,
    "tools" JSONB NOT NULL,
    "activity" JSONB NOT NULL,
    "productivity" JSONB NOT NULL,

    CONSTRAINT "analytics_org_days_pkey" PRIMARY KEY ("organization_id","day")
);

-- CreateTable
CREATE TABLE "analytics_user_days" (
    "organization_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "user_id" TEXT NOT NULL,
    "tool_calls" INTEGER NOT NULL,
    "mcp_calls" INTEGER NOT NULL,
    "skill_calls" INTEGER NOT NULL,
    "slash_commands" INTEGER NOT NULL,
    "hooks" INTEGER NOT NULL,
    "user_turns" INTEGER NOT NULL,
    "sessions" INTEGER NOT NULL,
    "user_messages" INTEGER NOT NULL,
    "assistant_messages" INTEGER NOT NULL,
    "files_created" INTEGER NOT NULL,
    "files_edited" INTEGER NOT NULL,
    "git_commits" INTEGER NOT NULL,
    "git_prs_created" INTEGER NOT NULL,
    "billable_tokens" BIGINT NOT NULL,
    "primary_model" TEXT NOT NULL,
    "primary_model_tier" TEXT NOT NULL,
    "autonomy_ratio" DOUBLE PRECISION NOT NULL,
    "delegation_level" TEXT NOT NULL,
    "languages" TEXT[],
    "clients" TEXT[],

    CONSTRAINT "analytics_user_days_pkey" PRIMARY KEY ("organization_id","day","user_id")
);

-- CreateTable
CREATE TABLE "analytics_org_users" (
    "organization_id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,

    CONSTRAINT "analytics_org_users_pkey" PRIMARY KEY ("organization_id","user_id")
);

-- CreateIndex
CREATE INDEX "analytics_events_organization_id_occurred_at_idx" ON "analytics_events"("organization_id", "occurred_at");

-- CreateIndex
CREATE INDEX "analytics_events_recorded_at_idx" ON "analytics_events"("recorded_at");

-- CreateIndex
CREATE INDEX "analytics_user_days_organization_id_user_id_day_idx" ON "analytics_user_days"("organization_id", "user_id", "day");
