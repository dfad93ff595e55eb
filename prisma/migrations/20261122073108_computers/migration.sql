-- CreateEnum
CREATE TYPE "ComputerStatus" AS ENUM ('provisioning', 'active', 'error');

-- CreateTable
CREATE TABLE "computers" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "owner_kind" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "live_name" TEXT,
    "provider_type" TEXT NOT NULL,
    "status" "ComputerStatus" NOT NULL,
    "host_id" TEXT,
    "live_host_id" TEXT,
    "is_listed" BOOLEAN NOT NULL DEFAULT true,
    "remote_user" TEXT,
    "repos" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "auto_install_deps" BOOLEAN NOT NULL DEFAULT false,
    "cloned_repo_directories" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "source" JSONB,
    "relay_client_url" TEXT,
    "relay_agent_url" TEXT,
    "connection_type" TEXT,
    "ssh_host" TEXT,
    "ssh_port" INTEGER,
    "host_key_fingerprint" TEXT,
    "agent_public_key" TEXT,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "computers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "provisioning_steps" (
    "computer_id" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "install_session_id" TEXT,

    CONSTRAINT "provisioning_steps_pkey" PRIMARY KEY ("computer_id","id")
);

-- CreateTable
CREATE TABLE "install_runs" (
    "id" TEXT NOT NULL,
    "computer_id" TEXT NOT NULL,
    "install_session_id" TEXT NOT NULL,
    "directory" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "plans" JSONB NOT NULL DEFAULT '[]',
    "exit_code" INTEGER,
    "output_tail" TEXT,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "install_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "computer_metric_samples" (
    "computer_id" TEXT NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "cpu_used_pct" DOUBLE PRECISION NOT NULL,
    "cpu_count" INTEGER NOT NULL,
    "mem_used" BIGINT NOT NULL,
    "mem_total" BIGINT NOT NULL,
    "disk_used" BIGINT NOT NULL,
    "disk_total" BIGINT NOT NULL,

    CONSTRAINT "computer_metric_samples_pkey" PRIMARY KEY ("computer_id","timestamp")
);

-- CreateTable
CREATE TABLE "organization_ssh_keys" (
    "organization_id" TEXT NOT NULL,
    "public_key" TEXT NOT NULL,
    "private_key_ciphertext" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "organization_ssh_keys_pkey" PRIMARY KEY ("organization_id")
);

-- CreateTable
CREATE TABLE "source_control_integrations" (
    "id" TEXT NOT NULL,
    "organization_id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "username" TEXT NOT NULL,
    "token_ciphertext" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_control_integrations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "computers_organization_id_owner_id_created_at_idx" ON "computers"("organization_id", "owner_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "computers_organization_id_owner_id_live_name_key" ON "computers"("organization_id", "owner_id", "live_name");

-- CreateIndex
CREATE UNIQUE INDEX "computers_organization_id_owner_id_live_host_id_key" ON "computers"("organization_id", "owner_id", "live_host_id");

-- CreateIndex
CREATE INDEX "install_runs_computer_id_install_session_id_idx" ON "install_runs"("computer_id", "install_session_id");

-- CreateIndex
CREATE UNIQUE INDEX "source_control_integrations_organization_id_host_key" ON "source_control_integrations"("organization_id", "host");

-- AddForeignKey
ALTER TABLE "computers" ADD CONSTRAINT "computers_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "provisioning_steps" ADD CONSTRAINT "provisioning_steps_computer_id_fkey" FOREIGN KEY ("computer_id") REFERENCES "computers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "install_runs" ADD CONSTRAINT "install_runs_computer_id_fkey" FOREIGN KEY ("computer_id") REFERENCES "computers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "computer_metric_samples" ADD CONSTRAINT "computer_metric_samples_computer_id_fkey" FOREIGN KEY ("computer_id") REFERENCES "computers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "organization_ssh_keys" ADD CONSTRAINT "organization_ssh_keys_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "source_control_integrations" ADD CONSTRAINT "source_control_integrations_organization_id_fkey" FOREIGN KEY ("organization_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
