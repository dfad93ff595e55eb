/**
 * JSON with object keys in sorted order. Tool inputs come back from the database (jsonb) with
 * their keys reordered, so a request serialized from stored history would differ byte for byte
 * from the same request built in memory, and providers' prompt caches match bytes.
 */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]),
  );
}

export function stableStringify(value: unknown): string {
  return JSON.stringify(sortedKeys(value));
}
