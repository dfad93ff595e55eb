/**
 * The real parts tests run against (PostgreSQL, sshd, Gitea, MinIO, the Kubernetes test cluster,
 * the Pulumi CLI, Chromium) and the one rule for a part that is missing here: locally the tests
 * that need it are skipped, saying why; under CI (CI=true) the run fails loudly, naming what is
 * missing, so a CI run never passes by skipping.
 *
 * `missing` is why the part cannot run here, or undefined when it can (each part's support file
 * says, e.g. sshdMissing in sshd.ts); the answer is whether to skip (`describe.skipIf(skipWithout(...))`).
 */
export function skipWithout(tests: string, missing: string | undefined): boolean {
  if (missing === undefined) return false;
  if (process.env.CI === 'true') throw new Error(`CI=true: ${tests} cannot run: ${missing}`);
  console.warn(`skipping ${tests}: ${missing}`);
  return true;
}
