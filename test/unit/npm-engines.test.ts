import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/server-process.ts';

/** The machine's own Node and npm, as a newcomer's `npm install` runs them (not the project's Node 24). */
const SYSTEM_NODE = '/usr/bin/node';
const systemNodeVersion = fs.existsSync(SYSTEM_NODE) ? execFileSync(SYSTEM_NODE, ['-v'], { encoding: 'utf8' }).trim() : '';

/**
 * #34: `npm install` on the Node 20 the README supports prints no warnings a user cannot act on.
 * npm checks dependencies' `engines` against the Node running npm, reading them from the lockfile;
 * scripts/lock-engines.mjs drops the ranges the project's own Node 24 satisfies.
 */
describe('npm install on Node 20', () => {
  it('finds nothing for scripts/lock-engines.mjs to drop from package-lock.json', () => {
    const run = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts/lock-engines.mjs'), '--check'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it.skipIf(!systemNodeVersion.startsWith('v20.'))("prints no EBADENGINE with the machine's Node 20 (npm ci --dry-run, offline)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentplane-npm-'));
    try {
      for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(REPO_ROOT, file), path.join(dir, file));
      // The machine's npm on the machine's Node first on PATH, as in a shell outside npm scripts.
      const env = { ...process.env, PATH: `/usr/bin:/bin:${process.env.PATH}` };
      const run = spawnSync('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      expect(`${run.stdout}${run.stderr}`).not.toMatch(/EBADENGINE|npm warn/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
