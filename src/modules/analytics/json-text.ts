import { SerializedJson } from '../../http/serialized-json.ts';
import type { AnalyticsMeta, AnalyticsPagedMeta } from './schemas.ts';

/**
 * Analytics answers are assembled as JSON text: the roll-up stores each day's documents already
 * rendered from schema-typed values, and a year of them is megabytes that would otherwise be
 * parsed, checked and stringified again on every request.
 */

/**
 * One object's text from several objects' texts whose keys do not overlap. Each text is a whole
 * JSON object as JSON.stringify and PostgreSQL write them, with no space around its braces.
 */
export function mergeObjects(...objects: string[]): string {
  let members = '';
  for (const o of objects) {
    if (o.length > 2) members += (members === '' ? '' : ',') + o.slice(1, -1);
  }
  return `{${members}}`;
}

/** The `{data, meta}` envelope around rows that are JSON text each. */
export function envelope<T>(rows: readonly string[], meta: AnalyticsMeta | AnalyticsPagedMeta): SerializedJson<T> {
  return new SerializedJson<T>(`{"data":[${rows.join(',')}],"meta":${JSON.stringify(meta)}}`);
}

/** An answer built as values (the flattened group_by rows), typed by its schema's type. */
export function serialize<T>(value: T): SerializedJson<T> {
  return new SerializedJson<T>(JSON.stringify(value));
}
