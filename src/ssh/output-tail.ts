/** Keeps the last `limit` bytes written, so long output costs bounded memory. */
export class OutputTail {
  readonly #chunks: Buffer[] = [];
  #size = 0;
  readonly limit: number;
  truncated = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size > this.limit && this.#chunks.length > 0) {
      const first = this.#chunks[0]!;
      const excess = this.#size - this.limit;
      this.truncated = true;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#size -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#size -= excess;
      }
    }
  }

  toString(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }
}
