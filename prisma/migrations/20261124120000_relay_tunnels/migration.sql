-- CreateTable
CREATE TABLE "relay_replicas" (
    "id" TEXT NOT NULL,
    "peer_url" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "relay_replicas_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "relay_tunnels" (
    "computer_id" TEXT NOT NULL,
    "replica_id" TEXT NOT NULL,
    "connected_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "relay_tunnels_pkey" PRIMARY KEY ("computer_id")
);

-- CreateIndex
CREATE INDEX "relay_replicas_expires_at_idx" ON "relay_replicas"("expires_at");

-- CreateIndex
CREATE INDEX "relay_tunnels_replica_id_idx" ON "relay_tunnels"("replica_id");

-- AddForeignKey
ALTER TABLE "relay_tunnels" ADD CONSTRAINT "relay_tunnels_replica_id_fkey" FOREIGN KEY ("replica_id") REFERENCES "relay_replicas"("id") ON DELETE CASCADE ON UPDATE CASCADE;
