-- AlterTable
ALTER TABLE "source_control_integrations" ADD COLUMN     "base_url" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "created_by" TEXT,
ADD COLUMN     "login" TEXT,
ADD COLUMN     "origin" TEXT NOT NULL DEFAULT 'config',
ADD COLUMN     "provider" TEXT NOT NULL DEFAULT 'github',
ADD COLUMN     "token_hint" TEXT NOT NULL DEFAULT '';

-- CreateTable
CREATE TABLE "ci_automations" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "mode_id" TEXT NOT NULL,
    "computer_id" TEXT,
    "settings" JSONB NOT NULL DEFAULT '{}',
    "repos" JSONB NOT NULL DEFAULT '[]',
    "status" TEXT NOT NULL DEFAULT 'active',
    "paused_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ci_automations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ci_jobs" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "action" TEXT,
    "automation_id" TEXT,
    "automation_name" TEXT,
    "mode_id" TEXT,
    "status" TEXT NOT NULL,
    "repos" JSONB NOT NULL DEFAULT '[]',
    "detail" JSONB NOT NULL DEFAULT '{}',
    "requested_by" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "ci_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ci_scan_cache" (
    "organization_id" TEXT NOT NULL,
    "integration_id" TEXT NOT NULL,
    "scanned_at" TIMESTAMPTZ(3) NOT NULL,
    "result" JSONB NOT NULL,

    CONSTRAINT "ci_scan_cache_pkey" PRIMARY KEY ("organization_id")
);

-- CreateIndex
CREATE INDEX "ci_automations_organization_id_idx" ON "ci_automations"("organization_id");

-- CreateIndex
CREATE INDEX "ci_automations_computer_id_idx" ON "ci_automations"("computer_id");

-- CreateIndex
CREATE INDEX "ci_jobs_organization_id_created_at_id_idx" ON "ci_jobs"("organization_id", "created_at" DESC, "id" DESC);

-- AddForeignKey
ALTER TABLE "ci_automations" ADD CONSTRAINT "ci_automations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ci_jobs" ADD CONSTRAINT "ci_jobs_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ci_scan_cache" ADD CONSTRAINT "ci_scan_cache_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
