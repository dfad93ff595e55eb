-- CreateTable
CREATE TABLE "readiness_reports" (
    "id" UUID NOT NULL,
    "organization_id" TEXT NOT NULL,
    "repo_url" TEXT NOT NULL,
    "repo_key" TEXT NOT NULL,
    "apps" JSONB NOT NULL,
    "report" JSONB NOT NULL,
    "commit_hash" TEXT,
    "branch" TEXT,
    "has_local_changes" BOOLEAN,
    "has_non_remote_commits" BOOLEAN,
    "model_used" JSONB,
    "agent_version" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "readiness_reports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "readiness_evaluations" (
    "id" UUID NOT NULL,
    "organization_id" TEXT NOT NULL,
    "requested_by" JSONB NOT NULL,
    "repo_url" TEXT NOT NULL,
    "branch" TEXT,
    "computer_id" TEXT,
    "status" TEXT NOT NULL,
    "report_id" UUID,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "readiness_evaluations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "readiness_reports_organization_id_created_at_id_idx" ON "readiness_reports"("organization_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "readiness_reports_organization_id_repo_key_created_at_id_idx" ON "readiness_reports"("organization_id", "repo_key", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "readiness_evaluations_organization_id_created_at_idx" ON "readiness_evaluations"("organization_id", "created_at");
