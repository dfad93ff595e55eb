-- AlterTable
ALTER TABLE "computer_templates" ADD COLUMN     "warm_pool_size" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "organizations" ADD COLUMN     "warm_pool_defaults" JSONB NOT NULL DEFAULT '{}';
