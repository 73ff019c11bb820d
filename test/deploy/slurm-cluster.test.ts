/**
 * The private Slurm cluster the Slurm runner tests submit to (test/helpers/slurm.ts): two one-GPU
 * jobs run at once, each on its own GPU; a cancelled job and its processes go; stop() leaves no
 * process and no folder behind.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { alive } from "../helpers/runner-process.js";
import { run } from "../helpers/run.js";
import { startSlurm, type SlurmCluster } from "../helpers/slurm.js";

let cluster: SlurmCluster;
let jobs: string;

beforeAll(async () => {
  cluster = await startSlurm();
  jobs = join(cluster.dir, "jobs");
  mkdirSync(jobs);
});

afterAll(() => cluster?.stop());

async function sbatch(...args: string[]): Promise<string> {
  const out = await run("sbatch", ["--parsable", `--partition=${cluster.partition}`, `--chdir=${jobs}`, "--output=%j.out", ...args], {
    env: { ...process.env, ...cluster.env },
    timeout: 30_000,
  });
  expect(out.status, out.stderr).toBe(0);
  return out.stdout.trim();
}

async function until(what: string, ready: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

it("runs two one-GPU jobs side by side, each on its own GPU", async () => {
  // Each job waits for the other to have started: both .met files mean they ran at the same time,
  // with no fixed sleep to outlast on a loaded machine.
  const job = (me: string, other: string) =>
    `echo $CUDA_VISIBLE_DEVICES > ${me}.gpu; for i in $(seq 600); do [ -e ${other}.gpu ] && exec touch ${me}.met; sleep 0.1; done`;
  await sbatch("--gres=gpu:1", "--wrap", job("a", "b"));
  await sbatch("--gres=gpu:1", "--wrap", job("b", "a"));
  await until("both jobs met", () => existsSync(join(jobs, "a.met")) && existsSync(join(jobs, "b.met")));
  const gpus = ["a", "b"].map((name) => readFileSync(join(jobs, `${name}.gpu`), "utf8").trim());
  expect(gpus.sort()).toEqual(["0", "1"]);
  await until("the ended jobs leave the queue", () => cluster.squeue().length === 0);
});

it("cancels a job: it leaves the queue and its process is killed", async () => {
  const id = await sbatch("--wrap", "echo $$ > long.pid; exec sleep 600");
  const pidFile = join(jobs, "long.pid");
  await until("the long job runs", () => existsSync(pidFile) && readFileSync(pidFile, "utf8").endsWith("\n"));
  const pid = Number(readFileSync(pidFile, "utf8"));
  expect(alive([pid])).toEqual([pid]);
  const cancel = await run("scancel", [id], { env: { ...process.env, ...cluster.env }, timeout: 30_000 });
  expect(cancel.status, cancel.stderr).toBe(0);
  await until("the cancelled job leaves the queue", () => !cluster.squeue().includes(id));
  await until("the cancelled job's process ends", () => alive([pid]).length === 0);
});

it("stops: no daemon is left, nor its folder", async () => {
  const pids = ["munged", "slurmctld", "slurmd"].map((name) => Number(readFileSync(join(cluster.dir, `${name}.pid`), "utf8")));
  expect(alive(pids)).toEqual(pids);
  await cluster.stop();
  expect(alive(pids)).toEqual([]);
  expect(existsSync(cluster.dir)).toBe(false);
  await cluster.stop();
});
