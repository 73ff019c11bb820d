/**
 * Remembers the last `capacity` keys, so a handler can drop a redelivered
 * event it has already handled in this process. Not a substitute for
 * idempotent handlers: a redelivery can land on another instance.
 */
export class SeenSet {
  private readonly keys = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** True the first time a key is seen, false on every later call while it is remembered. */
  once(key: string): boolean {
    if (this.keys.has(key)) {
      this.keys.delete(key);
      this.keys.add(key);
      return false;
    }
    this.keys.add(key);
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.values().next().value!);
    return true;
  }
}
