import path from 'node:path/posix';
import { binary, list } from './evidence.ts';
import type { Criterion } from './types.ts';

/** Secret formats with a recognisable shape (kind, extended regular expression for git grep). */
const PATTERNS: [string, string][] = [
  ['private key', '-----BEGIN ([A-Z]+ )?PRIVATE KEY-----'],
  ['AWS access key id', '(AKIA|ASIA)[0-9A-Z]{16}'],
  ['GitHub token', '(gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,})'],
  ['GitLab token', 'glpat-[A-Za-z0-9_-]{20}'],
  ['Slack token', 'xox[abprs]-[A-Za-z0-9-]{10,}'],
  ['Stripe live key', '(sk|rk)_live_[A-Za-z0-9]{20,}'],
  ['Google API key', 'AIza[0-9A-Za-z_-]{35}'],
  ['OpenAI or Anthropic API key', 'sk-(ant-|proj-)?[A-Za-z0-9_-]{32,}'],
];
/** Documentation's own sample values are not secrets. */
const PLACEHOLDER = /EXAMPLE|example|xxxx|XXXX|<[^>]*>|\.\.\./;
/** Files that hold secrets by their very name: environment files and private key files. */
const SECRET_FILE = /^(\.env(\.(?!example$|sample$|template$|dist$|defaults$)[\w.-]+)?|id_(rsa|dsa|ecdsa|ed25519)|[^/]+\.(p12|pfx|jks|keystore))$/;

function kindOf(text: string): string {
  for (const [kind, pattern] of PATTERNS) if (new RegExp(pattern).test(text)) return kind;
  return 'secret';
}

/**
 * No credentials committed: no private keys or tokens of known formats in text files, no
 * environment or key files. Findings name file and line, never the value.
 */
export const secretsHygiene: Criterion = {
  id: 'secrets_hygiene',
  level: 3,
  title: 'Secrets hygiene',
  async evaluate(ctx) {
    const matches = (await ctx.grep(PATTERNS.map(([, p]) => p))).filter((m) => !PLACEHOLDER.test(m.text));
    const findings = matches.map((m) => `${kindOf(m.text)} in ${m.path}:${m.line}`);
    const files = ctx.files.filter((f) => SECRET_FILE.test(path.basename(f)));
    findings.push(...files.map((f) => `secret file ${f} committed`));
    if (findings.length === 0) {
      return binary(true, `No private keys, tokens or secret files found in ${ctx.files.length} files (${PATTERNS.length} secret formats checked)`);
    }
    return binary(false, `Possible committed secrets: ${list(findings, 5)}; remove them, rotate the credentials and purge them from history`);
  },
};
