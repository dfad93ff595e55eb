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
      new Set(['ComputerTemplate', 'ProviderPool', 'Member', 'ServiceAccount', 'CreditLimits', 'SourceControlIntegration', 'CiAutomation', 'Webhook']),
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

  it('reads valid files quickly and places later problems exactly; aliases and bad files take the exact parser', () => {
    const member = (name: string) => `apiVersion: agentplane.dev/v1\nkind: Member\nmetadata: {name: ${name}}\nspec:\n  email: ${name}@x.test\n`;
    const { documents } = parseDocuments([{ path: 'm.yaml', content: `# members\n${member('a')}---\n---\n${member('b')}` }]);
    expect(documents.map((d) => [d.name, d.at([]), d.at(['spec', 'email'])])).toEqual([
      ['a', { line: 2, column: 1 }, { line: 6, column: 3 }],
      ['b', { line: 9, column: 1 }, { line: 13, column: 3 }],
    ]);
    // An alias bomb is refused by the exact parser's alias limit, not expanded.
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 8 }, (_, i) => `${'bcdefghi'[i]}: &${'bcdefghi'[i]} [${Array(10).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
    ].join('\n');
    const refused = parseDocuments([
      {
        path: 'bomb.yaml',
        content: `apiVersion: agentplane.dev/v1\nkind: Member\nmetadata: {name: x}\nspec:\n  email: x@x.test\n  extra:\n    ${bomb.replaceAll('\n', '\n    ')}\n`,
      },
    ]);
    expect(refused.documents).toEqual([]);
    expect(refused.problems).toEqual([expect.objectContaining({ file: 'bomb.yaml', line: 1, message: expect.stringContaining('alias') })]);
  });
});
