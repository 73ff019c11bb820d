/**
 * A JetStream key-value bucket as the swarm uses one: strings under keys, each claimed once
 * (`create` fails where the key exists) and given up only at the revision its holder read, or
 * written and watched. The only place the swarm speaks to @nats-io/kv (its users:
 * swarm/runner-leases.ts, bus/runner-registry.ts).
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { Bus } from "./bus.js";

export interface KvOptions {
  /** How long a key lives after it was written, in milliseconds. */
  ttlMs: number;
  replicas?: number;
}

/** A key's value and the revision it was written at. */
export interface KvEntry {
  value: string;
  revision: number;
}

export class KvBucket {
  private constructor(private readonly kv: KV) {}

  static async open(bus: Bus, name: string, opts: KvOptions): Promise<KvBucket> {
    return new KvBucket(await new Kvm(bus.nc).create(name, { history: 1, ttl: opts.ttlMs, replicas: opts.replicas ?? 1 }));
  }

  /** The key's value, or undefined when it has none (never written, deleted or expired). */
  async get(key: string): Promise<KvEntry | undefined> {
    const e = await this.kv.get(key);
    return e?.operation === "PUT" ? { value: e.string(), revision: e.revision } : undefined;
  }

  /** Writes the key when it has no value; throws when another wrote one first. */
  async create(key: string, value: string): Promise<void> {
    await this.kv.create(key, value);
  }

  /** Writes the key whatever it held. */
  async put(key: string, value: string): Promise<void> {
    await this.kv.put(key, value);
  }

  /** Deletes the key whatever it holds. */
  async delete(key: string): Promise<void> {
    await this.kv.delete(key);
  }

  /**
   * Every key's value, then each change as it comes: `value` undefined for a deleted key. A key
   * that expires (the bucket's TTL) is not told: nats-server 2.9 keeps no marker of it.
   */
  async watch(onChange: (key: string, value: string | undefined) => void): Promise<{ stop(): void }> {
    const iter = await this.kv.watch();
    void (async () => {
      for await (const e of iter) onChange(e.key, e.operation === "PUT" ? e.string() : undefined);
    })();
    return { stop: () => iter.stop() };
  }

  /** Deletes the key if it is still at `revision`; a key written since stays. */
  async deleteAt(key: string, revision: number): Promise<void> {
    await this.kv.delete(key, { previousSeq: revision }).catch(() => undefined);
  }
}
