/**
 * Turns callbacks into an async iterable: producers push, one consumer
 * iterates until close() (or fail()). Used wherever events arrive from
 * several sources and leave as one stream.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private waiting?: (r: IteratorResult<T>) => void;
  private failWith?: (e: unknown) => void;
  private error?: unknown;
  private done = false;

  push(item: T): void {
    if (this.done) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = this.failWith = undefined;
      w({ value: item, done: false });
    } else this.items.push(item);
  }

  close(): void {
    this.done = true;
    const w = this.waiting;
    this.waiting = this.failWith = undefined;
    w?.({ value: undefined, done: true });
  }

  fail(err: unknown): void {
    this.error = err;
    this.done = true;
    const f = this.failWith;
    this.waiting = this.failWith = undefined;
    f?.(err);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length) {
        yield this.items.shift()!;
        continue;
      }
      if (this.error !== undefined) throw this.error;
      if (this.done) return;
      const next = await new Promise<IteratorResult<T>>((resolve, reject) => {
        this.waiting = resolve;
        this.failWith = reject;
      });
      if (next.done) return;
      yield next.value;
    }
  }
}
