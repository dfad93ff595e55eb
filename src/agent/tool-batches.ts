/**
 * Splits the model's tool calls into batches that run one after another: a run of consecutive
 * calls that may run at once forms one batch, every other call is a batch of its own. A read the
 * model asked for after a write therefore still sees the write, and commands keep their order.
 */
export function toolBatches<T>(calls: readonly T[], concurrent: (call: T) => boolean): T[][] {
  const batches: T[][] = [];
  let open = false;
  for (const call of calls) {
    if (concurrent(call) && open) batches.at(-1)!.push(call);
    else batches.push([call]);
    open = concurrent(call);
  }
  return batches;
}
