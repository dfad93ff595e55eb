import fs from 'node:fs/promises';
import path from 'node:path';
import { credentialsFrom, parseJson, type Credentials } from '../relay-client/computer.ts';
import { readConfigFiles } from './files.ts';
import { formatError, formatPlan, type PlanAnswer } from './print.ts';

export interface ConfigCommandOptions {
  url?: string;
  apiKey?: string;
  file?: string;
  prune?: boolean;
  out?: string;
}

/** Exit statuses of `config diff`, as `terraform plan -detailed-exitcode`. */
const NO_CHANGES = 0;
const ERROR = 1;
const CHANGES = 2;

async function call(creds: Credentials, method: string, apiPath: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(`${creds.url}${apiPath}`, {
      method,
      headers: { authorization: `Bearer ${creds.apiKey}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`cannot reach ${creds.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  return { status: res.status, body: parseJson(await res.text()) };
}

/** Runs one `agentplane config` command and answers its exit status. */
export async function runConfigCommand(what: 'diff' | 'apply' | 'export', opts: ConfigCommandOptions): Promise<number> {
  try {
    const creds = credentialsFrom(opts);
    if (what === 'export') {
      const res = await call(creds, 'GET', '/api/v0/config/export');
      if (res.status !== 200) return fail(formatError(res.status, res.body));
      const { files } = res.body as { files: { path: string; content: string }[] };
      if (!opts.out) {
        process.stdout.write(files.map((f) => `# ${f.path}\n${f.content}`).join('---\n'));
        return 0;
      }
      await fs.mkdir(opts.out, { recursive: true });
      for (const f of files) await fs.writeFile(path.join(opts.out, path.basename(f.path)), f.content);
      process.stderr.write(`wrote ${files.length} files to ${opts.out}\n`);
      return 0;
    }
    const files = await readConfigFiles(opts.file!);
    const res = await call(creds, 'POST', `/api/v0/config/${what === 'diff' ? 'plan' : 'apply'}`, { files, prune: opts.prune ?? false });
    if (res.status !== 200) return fail(formatError(res.status, res.body));
    if (what === 'diff') {
      const plan = res.body as PlanAnswer;
      process.stdout.write(formatPlan(plan));
      return plan.hasChanges ? CHANGES : NO_CHANGES;
    }
    const applied = res.body as { plan: PlanAnswer; revision: { number: number } | null };
    process.stdout.write(formatPlan(applied.plan));
    process.stdout.write(applied.revision ? `Applied: revision ${applied.revision.number}.\n` : 'Nothing to apply.\n');
    return 0;
  } catch (err) {
    return fail(`agentplane: ${(err as Error).message}\n`);
  }
}

function fail(message: string): number {
  process.stderr.write(message);
  return ERROR;
}
