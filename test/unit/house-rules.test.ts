import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/server-process.ts';

/** Runs a tool from node_modules in the repository root; its output when it fails, '' when it passes. */
function findings(script: string, args: string[]): string {
  const run = spawnSync(process.execPath, [path.join(REPO_ROOT, 'node_modules', script), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.error) throw run.error;
  return run.status === 0 ? '' : `${run.stdout}${run.stderr}`.trim();
}

/**
 * The rules the tools keep, so a review need not: the compiler refuses unused locals and parameters
 * (tsconfig.json; the console's tsconfig is checked in console-typecheck.test.ts), knip refuses
 * files and exports nothing uses (knip.json), and Biome keeps one format (biome.json).
 */
/**
 * Where tsc keeps what it learnt of this checkout (--incremental): a run after a small change
 * checks only what the change reaches. Outside the tree, one file per checkout.
 */
const TSC_BUILD_INFO = path.join(os.tmpdir(), `agentplane-tsc-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 12)}.tsbuildinfo`);

describe('house rules', () => {
  it('type-check under tsconfig.json, unused locals and parameters included', { timeout: 300_000 }, () => {
    expect(findings('typescript/bin/tsc', ['--noEmit', '--incremental', '--tsBuildInfoFile', TSC_BUILD_INFO])).toBe('');
  });

  it('leave no unused files, exports or dependencies (knip)', { timeout: 120_000 }, () => {
    expect(findings('knip/bin/knip.js', ['--no-progress', '--no-config-hints'])).toBe('');
  });

  // Passes once the tree is formatted: `npm run format` (biome format --write) writes what this checks.
  it('are formatted as biome.json says (npm run format fixes it)', { timeout: 120_000 }, () => {
    expect(findings('@biomejs/biome/bin/biome', ['format', '--reporter=summary'])).toBe('');
  });
});
