/**
 * A JetStream key-value bucket as the swarm uses one: strings under keys, each claimed once
 * (`claim` fails where the key exists) and given up only at the revision its holder read, or
 * written and watched. The only place the swarm speaks to @nats-io/kv (its users:
 * swarm/runner-leases.ts, bus/runner-registry.ts).
 */
import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
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
  private constructor(
    private readonly kv: KV,
    private readonly name: string,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  static async open(bus: Bus, name: string, opts: KvOptions): Promise<KvBucket> {
    // Reads from the stream's leader, not any replica (direct gets): a claim is only as sound as
    // the read before it (`claim`).
    const kv = await new Kvm(bus.nc).create(name, { history: 1, ttl: opts.ttlMs, replicas: opts.replicas ?? 1, allow_direct: false });
    return new KvBucket(kv, name, jetstream(bus.nc), await jetstreamManager(bus.nc));
  }

  /** The key's value, or undefined when it has none (never written, deleted or expired). */
  async get(key: string): Promise<KvEntry | undefined> {
    const e = await this.kv.get(key);
    return e?.operation === "PUT" ? { value: e.string(), revision: e.revision } : undefined;
  }

  /**
   * Writes the key when it has no value; false when another wrote one first. The check is the
   * bucket's last sequence, not the key's (what `KV.create` sends): a 3-node nats-server 2.9
   * cluster let two creates of one key at once both land about one time in four (two runners then
   * trained one trial, the chaos test saw it), while its leader checks the stream's last sequence
   * against the writes it has in flight. Any write to the bucket meanwhile fails the claim too, so
   * a caller that reads `undefined` again simply claims again.
   */
  async claim(key: string, value: string): Promise<boolean> {
    const { state } = await this.jsm.streams.info(`KV_${this.name}`);
    if (await this.get(key)) return false;
    try {
      await this.js.publish(`$KV.${this.name}.${key}`, value, { expect: { lastSequence: state.last_seq } });
      return true;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) return false;
      throw err;
    }
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
