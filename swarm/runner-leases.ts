/**
 * Which runner evaluates each evaluation key (`EvaluateRequest.idempotency_key`), in a JetStream
 * KV bucket every agent shares and that outlives them. A runner keeps one evaluation per key
 * (gpu-runner/flights.ts), so a duplicate or redelivered request must go to the runner that holds
 * it, not to the one health would pick now: with three runners, a trial's duplicate once trained
 * on a second runner beside the first (the chaos test's count of trainings found it). The first
 * request claims a runner for its key (`claim` fails where a key exists: a lease); the others
 * read it. A runner that failed the evaluation itself, or that no longer answers, loses its lease
 * (agents/analyst/main.ts), and the redelivery claims another. A lease names the runner's process
 * too: a request that read it before it moved, sent to the same address after that runner
 * restarted, is refused there (EvaluateRequest.runner_instance) instead of training beside the
 * runner the lease moved to, which the chaos test once saw in CI.
 */
import { KvBucket, type Bus } from "../bus/index.js";

const BUCKET = "runner-leases";
/** Longer than any run: a key's lease is of no use once its trial is judged (the analyst skips evaluated trials). */
const TTL_MS = 24 * 3600_000;
/** A claim fails on any write to the bucket between its read and its write (bus/kv.ts `claim`). */
const CLAIM_ATTEMPTS = 20;

/** A lease's holder: the runner's address and, when known, its process (HealthResponse.instance). */
export interface Holder {
  address: string;
  instance: string;
}

/** "address" or "address instance": an address has no space. */
const encode = (h: Holder) => (h.instance ? `${h.address} ${h.instance}` : h.address);
function decode(value: string): Holder {
  const [address = "", instance = ""] = value.split(" ");
  return { address, instance };
}

export class RunnerLeases {
  private constructor(private readonly kv: KvBucket) {}

  static async open(bus: Bus, replicas = 1): Promise<RunnerLeases> {
    return new RunnerLeases(await KvBucket.open(bus, BUCKET, { ttlMs: TTL_MS, replicas }));
  }

  /** The runner that holds `key`; when none does, `pick()`'s, claimed for it. */
  async holder(key: string, pick: () => Holder): Promise<Holder> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const held = await this.kv.get(key);
      if (held) return decode(held.value);
      const holder = pick();
      if (await this.kv.claim(key, encode(holder))) return holder;
      // Another write to the bucket came between the read and the claim (this key's or another's):
      // read again, apart from the claims it raced.
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
    }
    throw new Error(`no lease on ${key} after ${CLAIM_ATTEMPTS} claims: the runner-leases bucket is written faster than it can be read`);
  }

  /** Gives `key`'s lease up if `holder` still holds it (its runner failed the evaluation, or restarted). */
  async release(key: string, holder: Holder): Promise<void> {
    const held = await this.kv.get(key);
    if (held?.value !== encode(holder)) return;
    // Only that revision: a lease another request took meanwhile stays.
    await this.kv.deleteAt(key, held.revision);
  }
}
