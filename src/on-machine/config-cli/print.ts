/** What the API answers for a plan, as far as the command line prints it. */
export interface PlanAnswer {
  changes: {
    kind: string;
    name: string;
    file: string | null;
    action: 'create' | 'update' | 'delete' | 'unchanged';
    adopt: boolean;
    fields: { field: string; old?: unknown; new?: unknown }[];
    pending: string[];
  }[];
  summary: { create: number; update: number; delete: number; unchanged: number };
  hasChanges: boolean;
}

const SIGN = { create: '+', update: '~', delete: '-', unchanged: '=' } as const;
const show = (v: unknown) => JSON.stringify(v ?? null);

/** A plan as people read it: one block per change (unchanged objects only counted), then the totals. */
export function formatPlan(plan: PlanAnswer): string {
  const lines: string[] = [];
  for (const c of plan.changes) {
    if (c.action === 'unchanged' && !c.adopt) continue;
    const note = c.action === 'unchanged' ? ' (adopted: managed from now on, no change)' : c.adopt ? ' (adopted)' : '';
    lines.push(`${SIGN[c.action]} ${c.kind}/${c.name}${c.file ? `  ${c.file}` : ''}${note}`);
    for (const f of c.fields) lines.push(c.action === 'create' ? `    ${f.field}: ${show(f.new)}` : `    ${f.field}: ${show(f.old)} -> ${show(f.new)}`);
    for (const p of c.pending) lines.push(`    then: ${p}`);
  }
  const s = plan.summary;
  lines.push(
    plan.hasChanges
      ? `Plan: ${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.unchanged} unchanged.`
      : `No changes: the configuration matches the documents (${s.unchanged} objects).`,
  );
  return `${lines.join('\n')}\n`;
}

/** An error answer: its detail, and each problem with its place on a line of its own. */
export function formatError(status: number, body: unknown): string {
  const b = (body ?? {}) as {
    detail?: string;
    title?: string;
    metadata?: { problems?: { file?: string; line?: number; column?: number; document?: string; path?: string; message: string }[] };
  };
  const problems = b.metadata?.problems;
  if (!problems?.length) return `error ${status}: ${b.detail ?? b.title ?? 'no detail'}\n`;
  const lines = problems.map((p) => {
    const at = [p.file ? `${p.file}${p.line ? `:${p.line}:${p.column}` : ''}` : undefined, p.document, p.path].filter(Boolean).join(' ');
    return `  ${at}: ${p.message}`;
  });
  return `error ${status}: the configuration is not valid, nothing was changed\n${lines.join('\n')}\n`;
}
