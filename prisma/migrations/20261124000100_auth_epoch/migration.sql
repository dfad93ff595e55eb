-- CreateTable
CREATE TABLE "auth_epoch" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "epoch" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "auth_epoch_pkey" PRIMARY KEY ("id")
);

-- The one row the credential cache reads (src/auth/credential-cache.ts).
INSERT INTO "auth_epoch" ("id", "epoch") VALUES (1, 0);

-- Every change that can end or alter what a credential may do advances the epoch in its own
-- transaction. The triggers are deferred to commit, so the row is locked last and only for the
-- commit: no lock-order cycle with the rows the transaction changed before. An update counts when
-- one of the columns named in the trigger's arguments changed; they are arguments rather than an
-- `UPDATE OF` list because a column named in a trigger's definition can no longer change type,
-- as Prisma's migrations of an enum do.
CREATE FUNCTION "advance_auth_epoch"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  col text;
  changed boolean := TG_OP = 'DELETE';
  advanced bigint;
BEGIN
  IF NOT changed THEN
    FOREACH col IN ARRAY TG_ARGV LOOP
      changed := changed OR (to_jsonb(OLD) -> col) IS DISTINCT FROM (to_jsonb(NEW) -> col);
    END LOOP;
  END IF;
  IF changed THEN
    UPDATE "auth_epoch" SET "epoch" = "epoch" + 1 WHERE "id" = 1 RETURNING "epoch" INTO advanced;
    -- Delivered at commit; the embedded database's process listens instead of reading (src/db/auth-epoch.ts).
    PERFORM pg_notify('agentplane_auth_epoch', advanced::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER "api_keys_auth_epoch" AFTER UPDATE OR DELETE ON "api_keys"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('revoked_at', 'valid_until', 'expires_at', 'secret_hash', 'organization_id', 'user_id', 'service_account_id');

CREATE CONSTRAINT TRIGGER "service_accounts_auth_epoch" AFTER UPDATE OR DELETE ON "service_accounts"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('status', 'organization_id');

CREATE CONSTRAINT TRIGGER "memberships_auth_epoch" AFTER UPDATE OR DELETE ON "memberships"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('role', 'status', 'organization_id', 'user_id');

CREATE CONSTRAINT TRIGGER "users_auth_epoch" AFTER UPDATE OR DELETE ON "users"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('email');
