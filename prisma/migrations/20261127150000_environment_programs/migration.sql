-- AlterTable
ALTER TABLE "computer_templates" ADD COLUMN     "program_repository" TEXT,
ADD COLUMN     "program_path" TEXT,
ADD COLUMN     "program_ref" TEXT,
ADD COLUMN     "current_version_id" TEXT,
ADD COLUMN     "candidate_version_id" TEXT,
ADD COLUMN     "program_error" TEXT,
ADD COLUMN     "program_checked_at" TIMESTAMPTZ(3),
ADD COLUMN     "sealed_webhook_secret" TEXT,
ADD COLUMN     "pool_update" TEXT NOT NULL DEFAULT 'OnReplenish',
ADD COLUMN     "pool_max_unavailable" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "registration_timeout_seconds" INTEGER NOT NULL DEFAULT 600;

-- AlterTable
ALTER TABLE "computers" ADD COLUMN     "template_version_id" TEXT,
ADD COLUMN     "program_pausable" BOOLEAN,
ADD COLUMN     "registration_token_hash" TEXT,
ADD COLUMN     "registration_expires_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "computer_template_versions" (
    "id" TEXT NOT NULL,
    "template_id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "commit" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "preview" JSONB,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "previewed_at" TIMESTAMPTZ(3),

    CONSTRAINT "computer_template_versions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "computers_registration_token_hash_key" ON "computers"("registration_token_hash");

-- CreateIndex
CREATE INDEX "computer_template_versions_template_id_created_at_idx" ON "computer_template_versions"("template_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "computer_template_versions_template_id_commit_key" ON "computer_template_versions"("template_id", "commit");

-- AddForeignKey
ALTER TABLE "computer_template_versions" ADD CONSTRAINT "computer_template_versions_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "computer_templates"("id") ON DELETE CASCADE ON UPDATE CASCADE;
