/**
 * Runners that join the swarm over the bus instead of by an address given beforehand: a runner
 * started where nobody knows its address in advance (a Slurm job, on whichever node the scheduler
 * gave it, on a port it picked) writes its address into a KV bucket every few seconds, and the
 * agents and the launcher watch the bucket (swarm/runners.ts, deploy/slurm.ts). A runner that
 * stops says so (its key deleted); one killed without a word drops out when its key expires,
 * while the agents' health polls already pass it over.
 */
import { z } from "zod";
import { parseJson } from "../core/json.js";
import type { Bus } from "./bus.js";
import { KvBucket } from "./kv.js";

const BUCKET = "runners";
const ANNOUNCE_MS = 5_000;
/** Three announcements missed: a runner that stopped writing is gone. */
const TTL_MS = 3 * ANNOUNCE_MS + 1_000;

const EntrySchema = z.object({
  /** host:port, as the agents reach it. */
  address: z.string(),
  /** The scheduler's job id when a scheduler started it (SLURM_JOB_ID), else "". */
  job: z.string(),
  /** The one run whose trials it takes (a run's own jobs under `serve`), else "": any run's. */
  run: z.string().default(""),
});
export type RunnerEntry = z.input<typeof EntrySchema>;

/** KV keys take letters, digits and `-_=.`: an address's colon and brackets are not among them. */
const keyOf = (address: string) => address.replace(/[^A-Za-z0-9_=.-]/g, "_");

/** Keeps `entry` in the registry until `stop()`, which takes it out. */
export async function announceRunner(bus: Bus, entry: RunnerEntry, replicas = 1): Promise<{ stop(): Promise<void> }> {
  const kv = await KvBucket.open(bus, BUCKET, { ttlMs: TTL_MS, replicas });
  const key = keyOf(entry.address);
  const value = JSON.stringify(entry);
  await kv.put(key, value);
  const timer = setInterval(() => void kv.put(key, value).catch(() => undefined), ANNOUNCE_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      await kv.delete(key).catch(() => undefined);
    },
  };
}

/**
 * The runners in the registry, then each that joins (`entry`) or says it stopped (undefined).
 * An entry that does not parse is skipped: whatever wrote it is not a runner of this version.
 */
export async function watchRunners(bus: Bus, onChange: (address: string, entry: z.output<typeof EntrySchema> | undefined) => void, replicas = 1): Promise<{ stop(): void }> {
  const kv = await KvBucket.open(bus, BUCKET, { ttlMs: TTL_MS, replicas });
  const addresses = new Map<string, string>();
  return kv.watch((key, value) => {
    if (value === undefined) {
      const address = addresses.get(key);
      addresses.delete(key);
      if (address !== undefined) onChange(address, undefined);
      return;
    }
    const parsed = EntrySchema.safeParse(parseJson(value));
    if (!parsed.success || addresses.get(key) === parsed.data.address) return;
    addresses.set(key, parsed.data.address);
    onChange(parsed.data.address, parsed.data);
  });
}
