-- CreateTable
CREATE TABLE "config_secrets" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "sealed_value" TEXT NOT NULL,
    "created_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "config_secrets_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "config_resources" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "managed_by" TEXT NOT NULL,
    "file" TEXT,
    "declared" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "config_resources_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "config_revisions" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "number" INTEGER NOT NULL,
    "actor_kind" TEXT NOT NULL,
    "actor_id" TEXT,
    "source" TEXT NOT NULL,
    "commit" TEXT,
    "plan" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "config_revisions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "config_sources" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "repository" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "interval_seconds" INTEGER NOT NULL,
    "prune" BOOLEAN NOT NULL DEFAULT false,
    "drift" TEXT NOT NULL DEFAULT 'warn',
    "integration_id" TEXT,
    "sealed_webhook_secret" TEXT NOT NULL,
    "created_by" TEXT,
    "created_by_kind" TEXT NOT NULL DEFAULT 'user',
    "last_applied_commit" TEXT,
    "last_attempt_at" TIMESTAMPTZ(3),
    "last_commit" TEXT,
    "last_result" JSONB,
    "drift_found" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "config_sources_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "config_secrets_organization_id_name_key" ON "config_secrets"("organization_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "config_resources_organization_id_kind_name_key" ON "config_resources"("organization_id", "kind", "name");

-- CreateIndex
CREATE INDEX "config_revisions_organization_id_created_at_idx" ON "config_revisions"("organization_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "config_revisions_organization_id_number_key" ON "config_revisions"("organization_id", "number");

-- CreateIndex
CREATE INDEX "config_sources_organization_id_idx" ON "config_sources"("organization_id");

-- AddForeignKey
ALTER TABLE "config_secrets" ADD CONSTRAINT "config_secrets_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "config_resources" ADD CONSTRAINT "config_resources_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "config_revisions" ADD CONSTRAINT "config_revisions_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "config_sources" ADD CONSTRAINT "config_sources_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
