/**
 * The swarm's runners as Slurm jobs (`launch --runners slurm`): one `sbatch` per runner, each job
 * a gpu-runner that listens on a port it picks and joins the run over the bus
 * (bus/runner-registry.ts), since nobody knows beforehand which node the scheduler gives it. The
 * launcher follows the jobs with `squeue` (pending, running, its runner up, ended), submits a job
 * again for one that ended while the run goes on (cancelled, preempted, past its time limit), and
 * cancels every job of its own when it stops: nothing is left in the queue.
 *
 * The jobs' credentials are the deployment's secrets folder, read from a shared file system: the
 * job script names the folder, never a secret, and nothing goes on a command line.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { z } from "zod";
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { watchRunners, type Bus } from "../bus/index.js";
import { ResearchError } from "../core/failure.js";
import { jobsText } from "../core/format.js";
import { readJsonFile } from "../core/json.js";
import { alive } from "../core/process.js";
import type { Logger } from "../core/logger.js";
import { RunnerJobsSchema, type RunnerJobs } from "../proto/gen/research/v1/events_pb.js";
import { entryArgs } from "./entries.js";

const run = promisify(execFile);
const POLL_MS = 3_000;
/** A Slurm command that hangs (a controller not answering) fails after this. */
const COMMAND_TIMEOUT_MS = 30_000;
/** Jobs submitted in all, per job asked for: a cluster that ends every job at once is not retried forever. */
const SUBMISSIONS_PER_JOB = 3;

/**
 * The name of the jobs a launcher submits, with its pid and host, so that the next launch in the
 * workspace cancels the jobs of one that died without cancelling them (SIGKILL): by their name,
 * which no other launcher's jobs bear.
 */
const LAUNCHER_FILE = "launcher.json";
const LauncherSchema = z.object({ pid: z.number(), host: z.string(), name: z.string() });

/** What `launch --slurm-*` asks of each runner job; undefined leaves it to the cluster's defaults. */
export interface SlurmRequest {
  /** Runner jobs at once. */
  jobs: number;
  partition?: string;
  account?: string;
  /** Generic resources per job, as sbatch --gres takes them: "gpu:1". */
  gres?: string;
  cpus?: number;
  /** Memory per job, as sbatch --mem takes it: "16G". */
  mem?: string;
}


interface Job {
  id: string;
  state: "pending" | "running" | "ended";
  reason: string;
  address?: string;
}

export interface SlurmRunnersOptions {
  request: SlurmRequest;
  /** The job's wall-clock limit, minutes (slurmTimeLimitMin). */
  timeLimitMin: number;
  /** Folder for the job script and the jobs' logs (the workspace's `slurm/`). */
  dir: string;
  /** What the job's runner needs to join: the bus as the nodes reach it, the secrets folder. */
  env: Record<string, string>;
  /** gpu-runner's flags besides those of a job (slots, device, data roots, sandbox). */
  runnerArgs: string[];
  bus: Bus;
  replicas?: number;
  log: Logger;
}

/**
 * A job's time limit from the run's budget: the budget, the launcher's grace after it (the run
 * ends by then whatever happens, deploy/swarm.ts), and ten minutes for the runner to start and
 * for the report. A job that outlived its run would hold a node for nothing; one cut before it
 * would lose the last long training.
 */
export function slurmTimeLimitMin(budgetS: number): number {
  return Math.ceil((budgetS + Math.max(300, budgetS / 4)) / 60) + 10;
}

/** sbatch's flags for one runner job. */
export function sbatchArgs(request: SlurmRequest, timeLimitMin: number, name: string, log: string): string[] {
  return [
    "--parsable",
    `--job-name=${name}`,
    `--time=${timeLimitMin}`,
    `--output=${log}`,
    ...(request.partition ? [`--partition=${request.partition}`] : []),
    ...(request.account ? [`--account=${request.account}`] : []),
    ...(request.gres ? [`--gres=${request.gres}`] : []),
    ...(request.cpus ? [`--cpus-per-task=${request.cpus}`] : []),
    ...(request.mem ? [`--mem=${request.mem}`] : []),
  ];
}

/** The job script: the runner, listening on any port of the node, joining over the bus. */
function jobScript(env: Record<string, string>, runnerArgs: string[], stateRoot: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [
    "#!/bin/bash",
    "# A runner of the swarm as a Slurm job, written by the launcher (deploy/slurm.ts).",
    ...Object.entries(env).map(([k, v]) => `export ${k}=${q(v)}`),
    // Its own state folder: a job submitted again is another runner, and two must not share one.
    `exec ${[process.execPath, ...entryArgs("gpu-runner/main.ts"), "--address", "0.0.0.0:0", "--announce", ...runnerArgs].map(q).join(" ")} --state-dir ${q(stateRoot)}/"$SLURM_JOB_ID"`,
    "",
  ].join("\n");
}

export class SlurmRunners {
  private readonly jobs = new Map<string, Job>();
  private readonly name = `research-runner-${randomBytes(3).toString("hex")}`;
  private readonly script: string;
  private timer?: NodeJS.Timeout;
  private registry?: { stop(): void };
  private stopping = false;
  private last = "";
  private readonly firstUp: Promise<string>;
  private resolveFirstUp!: (address: string) => void;
  private polling = Promise.resolve();
  private readonly listeners = new Set<(counts: RunnerJobs) => void>();
  /** Whether a job that ended is worth submitting again: the run it serves has budget left (runGoal sets it). */
  resubmitWhile: () => boolean = () => true;

  private constructor(private readonly opts: SlurmRunnersOptions) {
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    this.script = join(opts.dir, "runner.sh");
    writeFileSync(this.script, jobScript(opts.env, opts.runnerArgs, join(opts.dir, "runner-state")));
    chmodSync(this.script, 0o700);
    this.firstUp = new Promise((resolve) => (this.resolveFirstUp = resolve));
  }

  /** Submits the runner jobs and follows them; throws when sbatch refuses (a bad partition, say). */
  static async start(opts: SlurmRunnersOptions): Promise<SlurmRunners> {
    const prev = readJsonFile(join(opts.dir, LAUNCHER_FILE), LauncherSchema);
    if (prev && prev.host === hostname() && !alive(prev.pid)) {
      opts.log.warn({ name: prev.name, pid: prev.pid }, "cancelling the runner jobs of a launcher that is gone");
      await run("scancel", [`--name=${prev.name}`], { timeout: COMMAND_TIMEOUT_MS }).catch((err: unknown) => opts.log.warn({ err: (err as Error).message }, "scancel failed"));
    }
    const pool = new SlurmRunners(opts);
    writeFileSync(join(opts.dir, LAUNCHER_FILE), JSON.stringify({ pid: process.pid, host: hostname(), name: pool.name }));
    pool.registry = await watchRunners(opts.bus, (address, entry) => pool.announced(address, entry?.job), opts.replicas);
    try {
      for (let i = 0; i < opts.request.jobs; i++) await pool.submit();
    } catch (err) {
      await pool.stop();
      throw err;
    }
    pool.polling = pool.poll();
    pool.timer = setInterval(() => void (pool.polling = pool.polling.then(() => pool.poll())), POLL_MS);
    return pool;
  }

  /**
   * `start`, then the address of the first runner up, the counts told to `onChange` until then;
   * none within `waitMs`: the jobs cancelled and an error that says why they wait.
   */
  static async startAndWait(opts: SlurmRunnersOptions & { waitMs: number; onChange?: (jobs: RunnerJobs) => void; signal?: AbortSignal }): Promise<{ pool: SlurmRunners; first: string }> {
    const pool = await SlurmRunners.start(opts);
    const unlisten = opts.onChange && pool.listen(opts.onChange);
    try {
      return { pool, first: await pool.waitForRunner(opts.waitMs, opts.signal) };
    } catch (err) {
      await pool.stop();
      throw err;
    } finally {
      unlisten?.();
    }
  }

  /** The address of the first runner up; `timeoutMs` without one: an error that says why the jobs wait; `signal` aborted: its reason. */
  async waitForRunner(timeoutMs: number, signal?: AbortSignal): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const jobs = jobsText(this.counts());
        reject(new ResearchError("runner_unavailable", `no Slurm runner job came up within ${Math.round(timeoutMs / 1000)} s (${jobs}); the jobs' logs are in ${this.opts.dir}`));
      }, timeoutMs);
      onAbort = () => reject(new ResearchError("cancelled", `stopped while waiting for the runner jobs: ${String(signal!.reason)}`));
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
    return Promise.race([this.firstUp, timeout]).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort!);
    });
  }

  /** The runner jobs asked for at once. */
  get requested(): number {
    return this.opts.request.jobs;
  }

  /** Calls `onChange` with the counts now and at each change, until the returned function is called. */
  listen(onChange: (counts: RunnerJobs) => void): () => void {
    this.listeners.add(onChange);
    onChange(this.counts());
    return () => this.listeners.delete(onChange);
  }

  /** The jobs as the launcher sees them now, each counted once by how far it got. */
  counts(): RunnerJobs {
    const jobs = [...this.jobs.values()];
    const pending = jobs.filter((j) => j.state === "pending");
    return create(RunnerJobsSchema, {
      requested: this.opts.request.jobs,
      pending: pending.length,
      starting: jobs.filter((j) => j.state === "running" && !j.address).length,
      up: jobs.filter((j) => j.state === "running" && j.address).length,
      ended: jobs.filter((j) => j.state === "ended").length,
      waiting: [...new Set(pending.map((j) => j.reason).filter((r) => r && r !== "None"))].join(", "),
    });
  }

  /** Cancels every job of this launcher and waits (bounded) until the queue holds none of them. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.polling;
    this.registry?.stop();
    const live = [...this.jobs.values()].filter((j) => j.state !== "ended").map((j) => j.id);
    if (live.length === 0) return;
    await run("scancel", live, { timeout: COMMAND_TIMEOUT_MS }).catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message, jobs: live }, "scancel failed"));
    // A controller that does not answer leaves them to scancel's word: the stop must end.
    const left = () => this.queued().then((q) => q.size, () => 0);
    for (let i = 0; i < 60 && (await left()) > 0; i++) await new Promise((r) => setTimeout(r, 500));
    for (const id of live) this.jobs.get(id)!.state = "ended";
  }

  private async submit(): Promise<void> {
    const log = join(this.opts.dir, "runner-%j.log");
    const { stdout } = await run("sbatch", [...sbatchArgs(this.opts.request, this.opts.timeLimitMin, this.name, log), this.script], { timeout: COMMAND_TIMEOUT_MS }).catch((err: unknown) => {
      const e = err as { stderr?: string; message: string };
      throw new ResearchError("invalid_config", `sbatch refused the runner job: ${(e.stderr || e.message).trim().split("\n").pop()}`);
    });
    // --parsable: "id" or "id;cluster".
    const id = stdout.trim().split(";")[0]!;
    this.jobs.set(id, { id, state: "pending", reason: "" });
    this.opts.log.info({ job: id }, "runner job submitted");
    this.changed();
  }

  /** This launcher's jobs in the queue, by id: their state and squeue's reason. */
  private async queued(): Promise<Map<string, { state: string; reason: string }>> {
    const { stdout } = await run("squeue", ["--noheader", `--name=${this.name}`, "--format=%i|%T|%r"], { timeout: COMMAND_TIMEOUT_MS });
    return new Map(
      stdout
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const [id, state, reason] = line.split("|");
          return [id!, { state: state!, reason: reason ?? "" }];
        }),
    );
  }

  private async poll(): Promise<void> {
    if (this.stopping) return;
    let queued: Map<string, { state: string; reason: string }>;
    try {
      queued = await this.queued();
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, "squeue failed; the jobs' states are as last seen");
      return;
    }
    const ended: Job[] = [];
    for (const job of this.jobs.values()) {
      if (job.state === "ended") continue;
      const q = queued.get(job.id);
      if (!q) {
        Object.assign(job, { state: "ended", address: undefined });
        ended.push(job);
      } else {
        job.state = q.state === "PENDING" ? "pending" : "running";
        job.reason = q.reason;
      }
    }
    this.changed();
    for (const job of ended) {
      this.opts.log.warn({ job: job.id }, "runner job left the queue");
      if (this.stopping || this.jobs.size >= this.opts.request.jobs * SUBMISSIONS_PER_JOB || !this.resubmitWhile()) continue;
      await this.submit().catch((err: unknown) => this.opts.log.error({ err: (err as Error).message }, "could not submit a runner job again"));
    }
  }

  private announced(address: string, job: string | undefined): void {
    const mine = job ? this.jobs.get(job) : [...this.jobs.values()].find((j) => j.address === address);
    // An ended job's runner that the registry still told (a late announcement) does not bring it back.
    if (!mine || (job && mine.state === "ended")) return;
    if (job) {
      Object.assign(mine, { address, state: "running" });
      this.resolveFirstUp(address);
    } else mine.address = undefined;
    this.changed();
  }

  private changed(): void {
    const counts = this.counts();
    const key = jobsText(counts);
    if (key === this.last) return;
    this.last = key;
    for (const listener of this.listeners) listener(counts);
  }
}
