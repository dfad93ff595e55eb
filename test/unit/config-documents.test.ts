import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocuments } from '../../src/modules/config/documents.ts';

const EXAMPLES = path.resolve(import.meta.dirname, '../../examples/platform-config');

describe('config documents', () => {
  it('the example directory the README points at is valid', () => {
    const files = fs
      .readdirSync(EXAMPLES)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => ({ path: f, content: fs.readFileSync(path.join(EXAMPLES, f), 'utf8') }));
    const { documents, problems } = parseDocuments(files);
    expect(problems).toEqual([]);
    expect(new Set(documents.map((d) => d.kind))).toEqual(
      new Set(['ComputerTemplate', 'ProviderPool', 'Member', 'ServiceAccount', 'CreditLimits', 'SourceControlIntegration', 'Webhook']),
    );
  });

  it('names the place of every problem: a duplicate key, a bad envelope, a bad list item', () => {
    const content = [
      'apiVersion: agentplane.dev/v1\nkind: Member\nmetadata: {name: a}\nspec:\n  email: a@x.test\n  email: b@x.test\n',
      'apiVersion: agentplane.dev/v2\nkind: Member\nmetadata: {name: b}\nspec: {email: b@x.test}\n',
      'apiVersion: agentplane.dev/v1\nkind: CreditLimits\nmetadata: {name: c}\nspec:\n  users:\n    - {email: ok@x.test, limit: 2000000}\n    - {email: bad, limit: 5}\n',
    ].join('---\n');
    const { documents, problems } = parseDocuments([{ path: 'f.yaml', content }]);
    expect(documents).toEqual([]);
    expect(problems).toEqual([
      expect.objectContaining({ file: 'f.yaml', line: 6, message: expect.stringMatching(/YAML syntax error: .*unique/i) }),
      expect.objectContaining({ file: 'f.yaml', line: 8, column: 1, path: 'apiVersion', message: 'apiVersion must be "agentplane.dev/v1"' }),
      expect.objectContaining({ line: 19, column: 8, path: 'spec.users.1.email' }),
      expect.objectContaining({ line: 19, column: 20, path: 'spec.users.1.limit' }),
    ]);
  });
});
