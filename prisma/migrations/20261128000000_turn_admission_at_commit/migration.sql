-- A turn's admission is counted inside its COMMIT. beginTurn marks the session running and names
-- the limits in a transaction-local setting (`agentplane.turn_limits`, "per organization,per
-- owner"); this trigger fires at commit, takes the organization's lock, counts its running turns
-- (this one included) and refuses the commit (SQLSTATE AP429) when a limit is passed. The lock is
-- held from here to the end of the commit, with no round trip to the client inside it: before,
-- it was taken by a statement of the client's and held across the count and the COMMIT, and a
-- burst of turn starts queued behind it on every replica.
--
-- Each statement of a PL/pgSQL function takes a new snapshot under READ COMMITTED, and a
-- transaction's locks are released after its commit is visible: a commit that waited for the
-- lock counts every turn admitted before it. Without the setting (a resumed turn, a subagent's
-- session, a migration) nothing is counted.
CREATE FUNCTION "sessions_admit_turn"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  limits text := current_setting('agentplane.turn_limits', true);
  per_organization int;
  per_owner int;
  organization_running bigint;
  owner_running bigint;
BEGIN
  IF coalesce(limits, '') = '' THEN
    RETURN NULL;
  END IF;
  per_organization := split_part(limits, ',', 1)::int;
  per_owner := split_part(limits, ',', 2)::int;
  PERFORM pg_advisory_xact_lock(hashtext('turns:' || NEW."organization_id"));
  SELECT count(*), count(*) FILTER (WHERE "owner_kind" = NEW."owner_kind" AND "owner_id" = NEW."owner_id")
    INTO organization_running, owner_running
    FROM "sessions"
    WHERE "organization_id" = NEW."organization_id" AND "status" = 'running' AND "deleted_at" IS NULL AND "parent_session_id" IS NULL;
  IF organization_running > per_organization OR owner_running > per_owner THEN
    RAISE EXCEPTION 'turn not admitted: % running in the organization (limit %), % of its owner (limit %)',
      organization_running, per_organization, owner_running, per_owner
      USING ERRCODE = 'AP429';
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER "sessions_turn_admission"
  AFTER UPDATE OF "status" ON "sessions"
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW
  WHEN (NEW."status" = 'running' AND OLD."status" <> 'running' AND NEW."parent_session_id" IS NULL)
  EXECUTE FUNCTION "sessions_admit_turn"();
