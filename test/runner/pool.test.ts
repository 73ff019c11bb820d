import { afterEach, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../core/logger.js";
import { WorkerPool } from "../../gpu-runner/pool.js";

/**
 * A worker that speaks the zygote's protocol (gpu-runner/worker.ts) without torch: it notes its
 * start in a file, is ready after START_S, and answers every job with a result at once.
 */
const FAKE_WORKER = `
import json, os, sys, time
with open(os.environ["STARTS"], "a") as f: f.write(os.environ["SLOT"] + "\\n")
time.sleep(float(os.environ["START_S"]))
print(json.dumps({"type": "ready", "device": {"kind": "cpu", "name": "fake", "torch_version": "0"}}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "run":
        print(json.dumps({"type": "event", "job_id": m["job_id"], "event": {"kind": "result", "seconds": 0}}), flush=True)
        print(json.dumps({"type": "done", "job_id": m["job_id"]}), flush=True)
`;

let dir = "";
let pool: WorkerPool | undefined;
afterEach(async () => {
  await pool?.close();
  rmSync(dir, { recursive: true, force: true });
});

function fakePool(slots: number, startS: (slot: string) => number): { pool: WorkerPool; starts: () => string[] } {
  dir = mkdtempSync(join(tmpdir(), "pool-test-"));
  const starts = join(dir, "starts");
  const logger = createLogger("test-pool");
  logger.level = "silent";
  const p = new WorkerPool({
    name: "train",
    slots,
    sandbox: false,
    scratchRoot: dir,
    logger,
    launch: (scratchDir) => {
      const slot = scratchDir.split("/").pop()!;
      return { command: "/usr/bin/python3", args: ["-c", FAKE_WORKER], env: { STARTS: starts, SLOT: slot, START_S: String(startS(slot)) } };
    },
  });
  return { pool: p, starts: () => readFileSync(starts, "utf8").trim().split("\n").sort() };
}

const job = (p: WorkerPool) => p.run("train", () => ({}), () => {});

it("starts every slot's worker beside slot 0's, without a job, and serves once slot 0's has started", async () => {
  const fake = fakePool(3, (slot) => (slot === "slot-0" ? 0.1 : 2));
  pool = fake.pool;
  await pool.start();
  expect(pool.stats().ready).toBe(1);
  expect(fake.starts()).toEqual(["slot-0", "slot-1", "slot-2"]);
  for (let i = 0; i < 100 && pool.stats().ready < 3; i++) await new Promise((r) => setTimeout(r, 50));
  expect(pool.stats().ready).toBe(3);
  expect(fake.starts()).toEqual(["slot-0", "slot-1", "slot-2"]);
});

it("gives a job that takes a slot whose worker is starting that start, not a second one", async () => {
  const fake = fakePool(2, () => 1);
  pool = fake.pool;
  await pool.start();
  // Slot 1's worker is starting (1 s): both jobs run, and no slot's worker started twice.
  const ends = await Promise.all([job(pool), job(pool)]);
  expect(ends.map((e) => e.kind)).toEqual(["result", "result"]);
  expect(fake.starts()).toEqual(["slot-0", "slot-1"]);
  expect(pool.stats().ready).toBe(2);
});

it("stops a worker still starting in the background when the pool closes", async () => {
  const fake = fakePool(2, (slot) => (slot === "slot-0" ? 0.1 : 30));
  pool = fake.pool;
  await pool.start();
  for (let i = 0; i < 100 && fake.starts().length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  const t0 = Date.now();
  await pool.close();
  expect(Date.now() - t0).toBeLessThan(5000);
  expect(fake.starts()).toEqual(["slot-0", "slot-1"]);
  expect(pool.stats().ready).toBe(0);
});
