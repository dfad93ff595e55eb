import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/server-process.ts';

/**
 * The console's sources are served with their types stripped, never compiled: this is where their
 * types are checked (their own tsconfig: the DOM library, bundler resolution), beside the root's.
 */
describe('the web console sources', () => {
  it('type-check under console/tsconfig.json', { timeout: 120_000 }, () => {
    const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '--noEmit', '-p', path.join(REPO_ROOT, 'console')], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      output = (err as { stdout?: string }).stdout ?? String(err);
    }
    expect(output).toBe('');
  });
});
