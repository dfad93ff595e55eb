-- CreateTable
CREATE TABLE "wiki_runs" (
    "id" UUID NOT NULL,
    "organization_id" TEXT NOT NULL,
    "creator_kind" TEXT NOT NULL,
    "creator_id" TEXT NOT NULL,
    "requested_by" JSONB NOT NULL,
    "repo_url" TEXT NOT NULL,
    "repo_key" TEXT NOT NULL,
    "branch" TEXT,
    "commit_hash" TEXT,
    "has_local_changes" BOOLEAN,
    "agent_version" TEXT,
    "source" TEXT NOT NULL,
    "computer_id" TEXT,
    "model" TEXT,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "privacy" TEXT NOT NULL DEFAULT 'organization',
    "public_token" TEXT,
    "page_count" INTEGER NOT NULL DEFAULT 0,
    "pages_reused" INTEGER NOT NULL DEFAULT 0,
    "pages_generated" INTEGER NOT NULL DEFAULT 0,
    "base_run_id" UUID,
    "meta" JSONB NOT NULL DEFAULT '{}',
    "token_usage" JSONB NOT NULL DEFAULT '{}',
    "video_key" TEXT,
    "video_content_type" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "checkpoint" JSONB,

    CONSTRAINT "wiki_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "wiki_pages" (
    "run_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "parent_id" TEXT,
    "position" INTEGER NOT NULL,
    "markdown" TEXT NOT NULL,
    "sources" JSONB NOT NULL DEFAULT '[]',
    "links_out" TEXT[],
    "symbols" TEXT[],
    "reused" BOOLEAN NOT NULL DEFAULT false,
    "degraded" TEXT,
    "plain" TEXT NOT NULL DEFAULT '',
    "search" tsvector,

    CONSTRAINT "wiki_pages_pkey" PRIMARY KEY ("run_id","id")
);

-- CreateIndex
CREATE UNIQUE INDEX "wiki_runs_public_token_key" ON "wiki_runs"("public_token");

-- CreateIndex
CREATE INDEX "wiki_runs_organization_id_repo_key_created_at_idx" ON "wiki_runs"("organization_id", "repo_key", "created_at");

-- CreateIndex
CREATE INDEX "wiki_runs_organization_id_created_at_idx" ON "wiki_runs"("organization_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "wiki_pages_run_id_path_key" ON "wiki_pages"("run_id", "path");

-- AddForeignKey
ALTER TABLE "wiki_pages" ADD CONSTRAINT "wiki_pages_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "wiki_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- CreateIndex
CREATE INDEX "wiki_pages_search_idx" ON "wiki_pages" USING GIN ("search");
