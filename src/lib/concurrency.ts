/**
 * Runs `work` on each item, at most `limit` at a time, taking items in order; once `signal`
 * aborts, no further item is started. `work` handles its own errors: a rejection ends the call.
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
