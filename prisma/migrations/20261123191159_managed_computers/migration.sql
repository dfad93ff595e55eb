-- AlterTable
ALTER TABLE "computers" ADD COLUMN     "last_active_at" TIMESTAMPTZ(3),
ADD COLUMN     "operation" TEXT,
ADD COLUMN     "operation_deadline" TIMESTAMPTZ(3),
ADD COLUMN     "operation_error" TEXT,
ADD COLUMN     "power_state" TEXT,
ADD COLUMN     "resources" JSONB,
ADD COLUMN     "ssh_key_ciphertext" TEXT,
ADD COLUMN     "ssh_public_key" TEXT;

-- CreateIndex
CREATE INDEX "computers_operation_operation_deadline_idx" ON "computers"("operation", "operation_deadline");
