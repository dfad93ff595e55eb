-- The auth epoch also fences the cached service-account lists (GET /api/v0/service-accounts,
-- src/modules/service-accounts/accounts.ts): a new account, a change to any listed column, and a
-- change to an organization's entitlements (the 402 of that list) advance it too. These are
-- administrative writes, rare beside the reads they let a server skip.
--
-- `advance_auth_epoch` needs no change for inserts: OLD is NULL then, so every watched column that
-- NEW sets (`status` and `organization_id` always are) counts as changed.

DROP TRIGGER "service_accounts_auth_epoch" ON "service_accounts";

CREATE CONSTRAINT TRIGGER "service_accounts_auth_epoch" AFTER INSERT OR UPDATE OR DELETE ON "service_accounts"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('status', 'organization_id', 'name', 'description', 'created_by', 'team_ids', 'created_at', 'updated_at');

CREATE CONSTRAINT TRIGGER "organizations_auth_epoch" AFTER UPDATE OR DELETE ON "organizations"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION "advance_auth_epoch"('entitlements');
