/**
 * Which runner evaluates each evaluation key (`EvaluateRequest.idempotency_key`), in a JetStream
 * KV bucket every agent shares and that outlives them. A runner keeps one evaluation per key
 * (gpu-runner/flights.ts), so a duplicate or redelivered request must go to the runner that holds
 * it, not to the one health would pick now: with three runners, a trial's duplicate once trained
 * on a second runner beside the first (the chaos test's count of trainings found it). The first
 * request claims a runner for its key (`create` fails where a key exists: a lease); the others
 * read it. A runner that failed the evaluation itself, or that no longer answers, loses its lease
 * (agents/analyst/main.ts), and the redelivery claims another.
 */
import { KvBucket, type Bus } from "../bus/index.js";

const BUCKET = "runner-leases";
/** Longer than any run: a key's lease is of no use once its trial is judged (the analyst skips evaluated trials). */
const TTL_MS = 24 * 3600_000;

export class RunnerLeases {
  private constructor(private readonly kv: KvBucket) {}

  static async open(bus: Bus, replicas = 1): Promise<RunnerLeases> {
    return new RunnerLeases(await KvBucket.open(bus, BUCKET, { ttlMs: TTL_MS, replicas }));
  }

  /** The address of the runner that holds `key`; when none does, `pick()`'s, claimed for it. */
  async holder(key: string, pick: () => string): Promise<string> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = await this.kv.get(key);
      if (held) return held.value;
      const address = pick();
      try {
        await this.kv.create(key, address);
        return address;
      } catch (err) {
        // Claimed by another request between the read and the claim: read theirs.
        lastError = err;
      }
    }
    throw lastError;
  }

  /** Gives `key`'s lease up if `address` still holds it (its runner failed the evaluation). */
  async release(key: string, address: string): Promise<void> {
    const held = await this.kv.get(key);
    if (held?.value !== address) return;
    // Only that revision: a lease another request took meanwhile stays.
    await this.kv.deleteAt(key, held.revision);
  }
}
