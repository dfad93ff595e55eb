import jsYaml from 'js-yaml';
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
  /** Where a path in the document starts, for problems found later (references); `[]`: the document. */
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

/** A structure in which some object is reached twice: YAML aliases, which the exact parser bounds. */
function sharesNodes(value: unknown, seen = new Set<object>()): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (seen.has(value)) return true;
  seen.add(value);
  return Object.values(value).some((v) => sharesNodes(v, seen));
}

/** One file's documents as values: js-yaml's (ten times faster), or undefined where only the exact parser will do. */
function quickValues(content: string): unknown[] | undefined {
  try {
    const values = jsYaml.loadAll(content, undefined, { schema: jsYaml.CORE_SCHEMA });
    return sharesNodes(values) ? undefined : values;
  } catch {
    return undefined; // a syntax error, a duplicate key: the exact parser names the place
  }
}

/** A file parsed by `yaml` (YAML 1.2 core schema, as js-yaml's CORE_SCHEMA): each document with its positions. */
function exactDocuments(file: { path: string; content: string }) {
  const lc = new LineCounter();
  const parsed = parseAllDocuments(file.content, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  return { lc, docs: Array.isArray(parsed) ? parsed : [] };
}

type FileResult = { documents: ConfigDocument[]; problems: Problem[] };

/** Checks one document's value against its envelope and its kind's spec schema. */
function checkDocument(value: unknown, file: string, at: (p: Path) => { line: number; column: number }, out: FileResult): void {
  const envelope = DocumentEnvelope.safeParse(value);
  const label = (v: unknown) => {
    const o = (v ?? {}) as { kind?: unknown; metadata?: { name?: unknown } };
    return typeof o.kind === 'string' ? `${o.kind}/${typeof o.metadata?.name === 'string' ? o.metadata.name : '?'}` : undefined;
  };
  if (!envelope.success) {
    out.problems.push(...issueProblems(envelope.error.issues, [], { file, document: label(value) }, at));
    return;
  }
  const { kind, metadata, spec } = envelope.data;
  const document = `${kind}/${metadata.name}`;
  const handler = kindByName(kind);
  if (!handler) {
    out.problems.push({ file, ...at(['kind']), document, path: 'kind', message: `unknown kind "${kind}"; known kinds: ${KIND_NAMES.join(', ')}` });
    return;
  }
  const checked = handler.spec.safeParse(spec ?? {});
  if (!checked.success) {
    out.problems.push(...issueProblems(checked.error.issues, ['spec'], { file, document }, at));
    return;
  }
  out.documents.push({
    kind,
    name: metadata.name,
    ...(metadata.labels ? { labels: metadata.labels } : {}),
    spec: checked.data as Record<string, unknown>,
    file,
    at,
  });
}

/** The exact way: `yaml`'s documents, with every syntax error's line and column. */
function parseExactly(file: { path: string; content: string }): FileResult {
  const out: FileResult = { documents: [], problems: [] };
  const { lc, docs } = exactDocuments(file);
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      for (const err of doc.errors) {
        const pos = err.linePos?.[0] ?? lc.linePos(err.pos[0]);
        out.problems.push({ file: file.path, line: pos.line, column: pos.col, message: `YAML syntax error: ${err.message.split('\n')[0]}` });
      }
      continue;
    }
    if (doc.contents === null) continue;
    const at = (path: Path) => locate(doc, lc, path);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // yaml refuses a document whose aliases expand past the limit (a resource exhaustion attack).
      out.problems.push({ file: file.path, ...at([]), message: `YAML document refused: ${(err as Error).message}` });
      continue;
    }
    checkDocument(value, file.path, at, out);
  }
  return out;
}

/**
 * Parses YAML files of documents (`---` between them, empty documents skipped) and checks each
 * against its envelope and its kind's spec schema. Every problem is collected: a YAML syntax
 * error names file, line and column; an unknown kind or field names its path.
 *
 * A file is read by js-yaml first; positions come from `yaml` only when asked for (a problem,
 * here or later in the plan): a file with any problem is parsed again the exact way, so its
 * problems are exactly what `yaml` reports.
 */
export function parseDocuments(files: { path: string; content: string }[]): FileResult {
  const documents: ConfigDocument[] = [];
  const problems: Problem[] = [];
  for (const file of files) {
    const values = quickValues(file.content);
    let quick: FileResult | undefined;
    if (values) {
      quick = { documents: [], problems: [] };
      let exact: ReturnType<typeof exactDocuments> | undefined;
      for (const [i, value] of values.entries()) {
        if (value === null || value === undefined) continue;
        const at = (path: Path) => {
          exact ??= exactDocuments(file);
          // Both parsers split a stream into the same documents (a comment-only file aside, which has none).
          const doc = exact.docs.length === values.length ? exact.docs[i] : undefined;
          return doc ? locate(doc, exact.lc, path) : { line: 1, column: 1 };
        };
        checkDocument(value, file.path, at, quick);
      }
    }
    const result = quick && quick.problems.length === 0 ? quick : parseExactly(file);
    documents.push(...result.documents);
    problems.push(...result.problems);
  }
  return { documents, problems };
}
