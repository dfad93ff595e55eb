import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repairInterruptedWrites } from '../../src/provisioning/pulumi/file-backend-repair.ts';

describe('repairing a file:// Pulumi backend after a killed run', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agentplane-repair-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("removes the stack's empty or cut-short metadata files and nothing else", async () => {
    const stacks = path.join(dir, '.pulumi', 'stacks', 'proj');
    const history = path.join(dir, '.pulumi', 'history', 'proj', 's1');
    mkdirSync(stacks, { recursive: true });
    mkdirSync(history, { recursive: true });
    const good = '{"user.content_type":"application/json"}\n';
    writeFileSync(path.join(stacks, 's1.json'), '{}');
    writeFileSync(path.join(stacks, 's1.json.attrs'), '');
    writeFileSync(path.join(stacks, 's1.json.bak.attrs'), good);
    writeFileSync(path.join(stacks, 's2.json.attrs'), '');
    writeFileSync(path.join(history, 's1-1.history.json.attrs'), '{"user.con');

    const removed = await repairInterruptedWrites(dir, 'proj', 's1');

    expect(removed.map((f) => path.relative(dir, f)).sort()).toEqual(
      ['.pulumi/history/proj/s1/s1-1.history.json.attrs', '.pulumi/stacks/proj/s1.json.attrs'].sort(),
    );
    expect(readdirSync(stacks).sort()).toEqual(['s1.json', 's1.json.bak.attrs', 's2.json.attrs']);
  });

  it('is a no-op for a stack that has no state yet', async () => {
    expect(await repairInterruptedWrites(dir, 'proj', 'unknown')).toEqual([]);
  });
});
