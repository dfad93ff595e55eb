/** One difference between two JSON values, by the path of the property that differs. */
export interface Change {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

function flatten(value: unknown, prefix: string, out: Map<string, unknown>) {
  if (value !== null && typeof value === 'object' && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, Array.isArray(value) ? `${prefix}[${k}]` : prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix || '(root)', value);
  }
  return out;
}

/**
 * The differences between two settings snapshots, generically: the snapshot's properties may be
 * added, removed or renamed between API versions (the spec says to parse it generically).
 */
export function diffJson(before: unknown, after: unknown): Change[] {
  const a = flatten(before, '', new Map());
  const b = flatten(after, '', new Map());
  const changes: Change[] = [];
  for (const [path, v] of a) {
    if (!b.has(path)) changes.push({ path, kind: 'removed', before: v });
    else if (JSON.stringify(b.get(path)) !== JSON.stringify(v)) changes.push({ path, kind: 'changed', before: v, after: b.get(path) });
  }
  for (const [path, v] of b) if (!a.has(path)) changes.push({ path, kind: 'added', after: v });
  return changes.sort((x, y) => x.path.localeCompare(y.path));
}
