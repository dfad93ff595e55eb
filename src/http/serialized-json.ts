import type { z } from 'zod';

/**
 * A response body that is JSON text already: an answer too large to build as objects, check with
 * zod and stringify on every request (a year of analytics is megabytes), or one served from a
 * cache (`checkedJson`). `T` is the schema type the text satisfies. The route sends the text as
 * it is, so the code that builds one must emit only what its route's schema accepts, by
 * construction from schema-typed values or by `checkedJson`, and tests must parse its outputs
 * with that schema.
 */
export class SerializedJson<T = unknown> {
  declare private readonly shape: T;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** `value` checked against its route's schema once and kept as text: for an answer served many times (a cache). */
export function checkedJson<T>(schema: z.ZodType<T>, value: T): SerializedJson<T> {
  return new SerializedJson<T>(JSON.stringify(schema.parse(value)));
}
