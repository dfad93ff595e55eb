import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A process that reads a lot from sockets allocates Buffers that die at once. Run in a process of
 * its own (V8 flags are per process): the same 320 MB of 64 KB Buffers, as socket reads allocate
 * them, beside a live heap, with and without countExternalMemoryWithHeap; counts full collections.
 */
function majorCollections(counted: boolean): number {
  const module = pathToFileURL(new URL('../../src/lib/v8-heap.ts', import.meta.url).pathname).href;
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { countExternalMemoryWithHeap } from ${JSON.stringify(module)};
    if (${counted}) countExternalMemoryWithHeap();
    let major = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    }).observe({ entryTypes: ['gc'] });
    // Module scope: alive to the end, a heap for the collections to mark.
    const live = Array.from({ length: 200_000 }, (_, i) => ({ i, s: 'item ' + i }));
    for (let i = 0; i < 5_000; i++) {
      Buffer.allocUnsafeSlow(64 * 1024)[0] = i;
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 100));
    process.stdout.write(String(major));
  `;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 }));
}

describe('external memory counted with the heap', () => {
  it('lets short-lived Buffers go without a full collection for every 64 MB of them', () => {
    const byDefault = majorCollections(false);
    const counted = majorCollections(true);
    // V8's default: a mark-compact every 64 MB or so of new Buffers (3 here on Node 24); counted
    // with the heap's limit, none. Fails if a Node upgrade drops the flag or changes its meaning.
    expect(byDefault).toBeGreaterThanOrEqual(2);
    expect(counted).toBeLessThanOrEqual(1);
  });
});
