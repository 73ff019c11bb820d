/**
 * A JetStream key-value bucket as the swarm uses one: strings under keys, each claimed once
 * (`create` fails where the key exists) and given up only at the revision its holder read. The
 * only place the swarm speaks to @nats-io/kv (swarm/runner-leases.ts is its user).
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

  /** Deletes the key if it is still at `revision`; a key written since stays. */
  async deleteAt(key: string, revision: number): Promise<void> {
    await this.kv.delete(key, { previousSeq: revision }).catch(() => undefined);
  }
}
