-- CreateTable
CREATE TABLE "control_plane_secrets" (
    "name" TEXT NOT NULL,
    "ciphertext" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "control_plane_secrets_pkey" PRIMARY KEY ("name")
);
