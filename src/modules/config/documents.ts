import { isMap, isScalar, isSeq, LineCounter, parseAllDocuments, type Document } from 'yaml';
import type { z } from 'zod';
import { BadRequest } from '../../lib/errors.ts';
import { kindByName, KIND_NAMES } from './kinds/catalog.ts';
import { DocumentEnvelope } from './schemas.ts';

/** One problem in the documents: where (file, line, column, the document, the path in it) and what. */
export interface Problem {
  file?: string;
  line?: number;
  column?: number;
  document?: string;
  path?: string;
  message: string;
}

/** A document that passed its envelope and its kind's spec schema. */
export interface ConfigDocument {
  kind: string;
  name: string;
  labels?: Record<string, string>;
  spec: Record<string, unknown>;
  file: string;
  line: number;
  /** Where a path in the document starts, for problems found later (references). */
  at(path: (string | number)[]): { line: number; column: number };
}

const where = (p: Problem) => [p.file ? `${p.file}${p.line ? `:${p.line}:${p.column}` : ''}` : undefined, p.document, p.path].filter(Boolean).join(' ');

/** Every problem at once, as one 400 whose `detail` lists them and whose metadata carries them. */
export function invalidDocuments(problems: Problem[]): BadRequest {
  const shown = problems.slice(0, 20).map((p) => `${where(p)}: ${p.message}`);
  const more = problems.length > shown.length ? `; and ${problems.length - shown.length} more` : '';
  return new BadRequest(`The configuration is not valid, nothing was changed: ${shown.join('; ')}${more}`, { metadata: { problems } });
}

type Path = (string | number)[];

type Ranged = { range?: [number, number, number] | null };

/** Where a path starts: a field's key (an unknown field, a bad value), a list's item, else the nearest parent that exists. */
function locate(doc: Document, lc: LineCounter, path: Path): { line: number; column: number } {
  for (let cut = path.length; cut >= 0; cut--) {
    const parent = cut === 0 ? doc.contents : (doc.getIn(path.slice(0, cut - 1), true) as unknown);
    let range: Ranged['range'];
    if (cut === 0) range = (parent as Ranged | null)?.range;
    else if (isMap(parent)) range = (parent.items.find((p) => isScalar(p.key) && p.key.value === path[cut - 1])?.key as Ranged | undefined)?.range;
    else if (isSeq(parent)) range = (parent.items[path[cut - 1] as number] as Ranged | undefined)?.range;
    if (range) {
      const pos = lc.linePos(range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return { line: 1, column: 1 };
}

/** zod issues as problems at their place in the document (an unknown field: the field itself). */
function issueProblems(issues: z.core.$ZodIssue[], prefix: Path, base: Omit<Problem, 'message'>, at: (p: Path) => { line: number; column: number }): Problem[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...(issue.path as Path)];
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    return keys.map((key) => {
      const full = key === undefined ? path : [...path, key];
      const message = key === undefined ? issue.message : `unknown field "${key}"`;
      return { ...base, ...at(full), path: full.join('.'), message };
    });
  });
}

/**
 * Parses YAML files of documents (`---` between them, empty documents skipped) and checks each
 * against its envelope and its kind's spec schema. Every problem is collected: a YAML syntax
 * error names file, line and column; an unknown kind or field names its path.
 */
export function parseDocuments(files: { path: string; content: string }[]): { documents: ConfigDocument[]; problems: Problem[] } {
  const documents: ConfigDocument[] = [];
  const problems: Problem[] = [];
  for (const file of files) {
    const lc = new LineCounter();
    const parsed = parseAllDocuments(file.content, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
    if (!Array.isArray(parsed)) continue; // an empty stream
    for (const doc of parsed) {
      if (doc.errors.length > 0) {
        for (const err of doc.errors) {
          const pos = err.linePos?.[0] ?? lc.linePos(err.pos[0]);
          problems.push({ file: file.path, line: pos.line, column: pos.col, message: `YAML syntax error: ${err.message.split('\n')[0]}` });
        }
        continue;
      }
      if (doc.contents === null) continue;
      const at = (path: Path) => locate(doc, lc, path);
      const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
      const envelope = DocumentEnvelope.safeParse(value);
      const label = (v: unknown) => {
        const o = (v ?? {}) as { kind?: unknown; metadata?: { name?: unknown } };
        return typeof o.kind === 'string' ? `${o.kind}/${typeof o.metadata?.name === 'string' ? o.metadata.name : '?'}` : undefined;
      };
      if (!envelope.success) {
        problems.push(...issueProblems(envelope.error.issues, [], { file: file.path, document: label(value) }, at));
        continue;
      }
      const { kind, metadata, spec } = envelope.data;
      const document = `${kind}/${metadata.name}`;
      const handler = kindByName(kind);
      if (!handler) {
        problems.push({ file: file.path, ...at(['kind']), document, path: 'kind', message: `unknown kind "${kind}"; known kinds: ${KIND_NAMES.join(', ')}` });
        continue;
      }
      const checked = handler.spec.safeParse(spec ?? {});
      if (!checked.success) {
        problems.push(...issueProblems(checked.error.issues, ['spec'], { file: file.path, document }, at));
        continue;
      }
      documents.push({
        kind,
        name: metadata.name,
        ...(metadata.labels ? { labels: metadata.labels } : {}),
        spec: checked.data as Record<string, unknown>,
        file: file.path,
        line: at([]).line,
        at: (path) => at(path),
      });
    }
  }
  return { documents, problems };
}
