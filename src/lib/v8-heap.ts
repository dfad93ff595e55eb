import v8 from 'node:v8';

/**
 * Counts memory outside the JavaScript heap (Buffers: every socket read allocates one) against
 * the heap's own limit, which V8 can do, instead of its default fixed allowance of 64 MB of new
 * external memory between full collections. A replica relaying a 100 MB copy reads 150-200 MB of
 * Buffers that die at once; each 64 MB of them started a full mark-compact of its ~70 MB heap,
 * which found almost nothing else to free: 3-7 a copy, up to half of the replica's CPU on it.
 * Counted with the heap, they are collected on the heap's own schedule (1-3 a copy), and the
 * process keeps the heap's limit: its memory stays bounded.
 */
export function countExternalMemoryWithHeap(): void {
  v8.setFlagsFromString('--external-memory-accounted-in-global-limit');
}
