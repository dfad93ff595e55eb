// Keeps `npm ci` and `npm install` free of EBADENGINE warnings nobody can act on. npm checks each
// package's `engines.node` against the Node that runs npm (a machine's Node 20), never against the
// Node the packages run on: the project's own Node 24 (the `node` dependency, which npm scripts,
// `npx` and bin/agentplane.js use). npm has no setting to name another runtime, and it reads the
// ranges from package-lock.json, so this drops from the lockfile each range the project's Node
// satisfies and the oldest Node the project installs on (`devEngines`) does not. A range the
// project's Node does not satisfy stays, and warns: raise the `node` dependency.
//   node scripts/lock-engines.mjs          rewrite package-lock.json
//   node scripts/lock-engines.mjs --check  list what it would drop; exit 1 if anything
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';

const root = path.resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const lockPath = path.join(root, 'package-lock.json');
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));

const runtime = pkg.dependencies.node;
const installer = semver.minVersion(pkg.devEngines.runtime.version).version;
const opts = { includePrerelease: true };
const dropped = [];
for (const [where, entry] of Object.entries(lock.packages)) {
  const range = entry.engines?.node;
  if (!where || typeof range !== 'string') continue;
  if (semver.satisfies(installer, range, opts) || !semver.satisfies(runtime, range, opts)) continue;
  dropped.push(`${where.replace(/^.*node_modules\//, '')}@${entry.version} (node ${range})`);
  delete entry.engines.node;
  if (Object.keys(entry.engines).length === 0) delete entry.engines;
}

if (process.argv.includes('--check')) {
  if (dropped.length > 0) {
    console.error(
      `package-lock.json asks for a newer Node than ${installer} where Node ${runtime} runs the package; run node scripts/lock-engines.mjs:\n  ${dropped.join('\n  ')}`,
    );
    process.exit(1);
  }
} else {
  writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`Node ${runtime} runs these; npm on Node ${installer} no longer warns:\n  ${dropped.join('\n  ') || '(none)'}`);
}
