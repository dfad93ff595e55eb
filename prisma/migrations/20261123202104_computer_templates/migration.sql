-- CreateTable
CREATE TABLE "computer_templates" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "live_name" TEXT,
    "provider" TEXT,
    "repos" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "auto_install_deps" BOOLEAN NOT NULL DEFAULT false,
    "setup_script" TEXT,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "computer_templates_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "computer_templates_organization_id_created_at_idx" ON "computer_templates"("organization_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "computer_templates_organization_id_live_name_key" ON "computer_templates"("organization_id", "live_name");

-- AddForeignKey
ALTER TABLE "computer_templates" ADD CONSTRAINT "computer_templates_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
