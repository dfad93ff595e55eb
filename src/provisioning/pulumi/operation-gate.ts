/**
 * Lets stack operations run side by side until something needs them all at rest (a backup
 * copying the Pulumi state): `whileIdle` holds new operations back, waits for running ones to
 * end, runs its function, then lets the held ones go.
 */
interface OperationGate {
  run<T>(operation: () => Promise<T>): Promise<T>;
  whileIdle<T>(fn: () => Promise<T>): Promise<T>;
}

export function createOperationGate(): OperationGate {
  let running = 0;
  let closed: Promise<void> | undefined;
  let drained: (() => void) | undefined;
  return {
    async run(operation) {
      while (closed) await closed;
      running++;
      try {
        return await operation();
      } finally {
        running--;
        if (running === 0) drained?.();
      }
    },
    async whileIdle(fn) {
      while (closed) await closed;
      let open!: () => void;
      closed = new Promise((resolve) => (open = resolve));
      try {
        if (running > 0) await new Promise<void>((resolve) => (drained = resolve));
        drained = undefined;
        return await fn();
      } finally {
        closed = undefined;
        open();
      }
    },
  };
}
