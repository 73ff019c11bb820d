/**
 * One warm worker: a Python fork server (python/zygote.py) that has imported
 * torch once and forks a fresh, sandboxed child per job, or the referee
 * (python/referee.py), which speaks the same protocol. This class speaks its
 * JSON-lines protocol and never trusts what comes back: a line that does not
 * parse, or a worker that dies mid-job, ends the job with a failure instead
 * of hurting the runner.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";
import type { Logger } from "../core/logger.js";
import { ResearchError, type FailureName } from "../core/failure.js";
import type { Launch } from "./sandbox.js";

/** The zygote's tasks, then the referee's. */
export type WorkerTask = "train" | "summarize" | "script" | "prepare" | "score";

/** Events as the worker writes them; the terminal kinds end a job. */
export type WorkerEvent =
  | { kind: "epoch"; [k: string]: unknown }
  | { kind: "first_step"; seconds: number }
  | { kind: "result"; [k: string]: unknown }
  /** One seed's result in a job of seeds trained together, whose "result" then ends it. */
  | { kind: "seed_result"; seed: number; [k: string]: unknown }
  /** Seeds asked together that must train one a job (stack.Stack.of says why). */
  | { kind: "apart"; reason: string }
  | { kind: "summary"; [k: string]: unknown }
  | { kind: "script"; [k: string]: unknown }
  | { kind: "prepared"; dataset_id: string; split_id: string; labels: string; info: Record<string, unknown> }
  | { kind: "scores"; examples: number; [k: string]: unknown }
  | { kind: "failure"; label: FailureName; message: string; traceback?: string };

/** The runner's answer to a training job about one of its epochs: whether the referee scored it its seed's best so far (trainer.py _BestEpoch). */
export interface EpochVerdict {
  seed: number;
  epoch: number;
  best: boolean;
}

/** What a job's progress goes to, with the way to answer the job while it runs. */
export type OnEvent = (e: WorkerEvent, answer: (v: EpochVerdict) => void) => void;

export type TerminalEvent = Extract<WorkerEvent, { kind: "result" | "apart" | "summary" | "script" | "prepared" | "scores" | "failure" }>;

const TERMINAL = new Set(["result", "apart", "summary", "script", "prepared", "scores", "failure"]);

export interface DeviceReport {
  kind: string;
  name: string;
  torch_version: string;
}

/**
 * Files a train job takes in or leaves behind. They pass through the worker's
 * scratch directory, where the zygote opens them for the sandboxed child as
 * labels-in/<job id>.npy, weights-in/<job id>.pt, weights-init/<job id>.<i>.pt and
 * weights-out/<job id>.<i>.pt.
 */
export interface JobFiles {
  /** The training labels of the job's split (the referee's "prepared" labels), copied in for the job. */
  labels?: string;
  /** Weights to load (spec.weights "load"), copied in for the job. */
  load?: string;
  /** Where the job's kept weights go (spec.weights "keep"), seed by seed of the job, when it ends with a result. */
  keep?: string[];
  /** The weights each seed of the job starts from (spec.init), copied in for the job. */
  init?: string[];
}

interface Job {
  id: string;
  onEvent: OnEvent;
  terminal?: TerminalEvent;
  finish: (e: TerminalEvent) => void;
}

export class Worker {
  private proc?: ChildProcess;
  private job?: Job;
  private stderrTail: string[] = [];
  device?: DeviceReport;

  constructor(
    readonly id: string,
    private readonly launch: Launch,
    private readonly log: Logger,
    /** The host's view of the directory the zygote knows as its scratch root. */
    private readonly scratchDir: string,
    private readonly startTimeoutMs = 120_000,
  ) {}

  get alive(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get busy(): boolean {
    return this.job !== undefined;
  }

  start(): Promise<DeviceReport> {
    const proc = spawn(this.launch.command, this.launch.args, { env: this.launch.env, stdio: ["pipe", "pipe", "pipe"] });
    this.proc = proc;
    this.stderrTail = [];
    createInterface({ input: proc.stderr! }).on("line", (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > 40) this.stderrTail.shift();
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill("SIGKILL");
        reject(new ResearchError("runner_unavailable", `worker ${this.id} did not start within ${this.startTimeoutMs / 1000} s`, this.tail()));
      }, this.startTimeoutMs);
      createInterface({ input: proc.stdout! }).on("line", (line) => {
        const msg = parseLine(line);
        if (!msg) return this.log.warn({ worker: this.id, line: line.slice(0, 200) }, "unparseable worker line");
        if (msg.type === "ready") {
          clearTimeout(timer);
          this.device = msg.device as DeviceReport;
          resolve(this.device);
        } else this.onMessage(msg);
      });
      proc.on("error", (err) => {
        clearTimeout(timer);
        reject(new ResearchError("runner_unavailable", `cannot start worker: ${err.message}`));
      });
      proc.on("exit", (code, signal) => {
        clearTimeout(timer);
        const why = `worker process exited (${signal ?? `code ${code}`})`;
        reject(new ResearchError("runner_unavailable", why, this.tail()));
        // Told to stop from outside (the runner stopping, a Slurm job cancelled or preempted, a
        // container stopped) is not the trial's doing: another runner takes it. A model's crash
        // ends the process otherwise (a code, SIGSEGV, SIGABRT, the OOM killer's SIGKILL).
        const stopped = signal === "SIGTERM" || signal === "SIGINT" || signal === "SIGHUP";
        this.job?.finish({ kind: "failure", label: stopped ? "runner_unavailable" : "crash", message: `${why} during the job`, traceback: this.tail() });
      });
    });
  }

  private tail(): string {
    return this.stderrTail.join("\n");
  }

  private onMessage(msg: Record<string, unknown>): void {
    const job = this.job;
    if (!job || msg.job_id !== job.id) return;
    if (msg.type === "event") {
      const event = msg.event as WorkerEvent | undefined;
      if (!event || typeof event.kind !== "string") return;
      if (TERMINAL.has(event.kind)) job.terminal ??= event as TerminalEvent;
      else job.onEvent(event, (v) => this.job === job && this.send({ type: "verdict", job_id: job.id, ...v }));
    } else if (msg.type === "done") {
      job.finish(
        job.terminal ?? { kind: "failure", label: "crash", message: "worker ended the job without a result", traceback: this.tail() },
      );
    }
  }

  /** Runs one job to its terminal event. Aborting the signal cancels the job in the worker. */
  run(task: WorkerTask, spec: unknown, onEvent: OnEvent, signal?: AbortSignal, files: JobFiles = {}): Promise<TerminalEvent> {
    if (!this.alive) return Promise.resolve({ kind: "failure", label: "runner_unavailable", message: `worker ${this.id} is not running` });
    if (this.job) throw new Error(`worker ${this.id} is busy`);
    const id = randomUUID();
    const inbox = [
      [files.load, join(this.scratchDir, "weights-in", `${id}.pt`)],
      [files.labels, join(this.scratchDir, "labels-in", `${id}.npy`)],
      ...(files.init ?? []).map((from, i) => [from, join(this.scratchDir, "weights-init", `${id}.${i}.pt`)]),
    ].filter((f): f is [string, string] => f[0] !== undefined);
    const outbox = (files.keep ?? []).map((to, i): [string, string] => [join(this.scratchDir, "weights-out", `${id}.${i}.pt`), to]);
    for (const [from, to] of inbox) {
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
    }
    return new Promise<TerminalEvent>((resolve) => {
      let killTimer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        this.send({ type: "cancel", job_id: id });
        // A worker that cannot even process a cancel is replaced.
        killTimer = setTimeout(() => this.proc?.kill("SIGKILL"), 10_000);
      };
      this.job = {
        id,
        onEvent,
        finish: (e) => {
          clearTimeout(killTimer);
          signal?.removeEventListener("abort", onAbort);
          this.job = undefined;
          this.settleFiles(inbox.map(([, to]) => to), outbox, e.kind === "result");
          resolve(e);
        },
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.send({ type: "run", job_id: id, task, spec });
    });
  }

  /** Never throws: a job's result stands without its weights (a later load is then refused as not kept). */
  private settleFiles(inbox: string[], outbox: [string, string][], keep: boolean): void {
    try {
      for (const file of inbox) rmSync(file, { force: true });
      for (const [from, to] of outbox) {
        if (keep) renameSync(from, to);
        else rmSync(from, { force: true });
      }
    } catch (err) {
      this.log.warn({ worker: this.id, err: (err as Error).message }, "could not keep a job's weights");
    }
  }

  private send(msg: unknown): void {
    if (this.alive) this.proc!.stdin!.write(`${JSON.stringify(msg)}\n`);
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.alive) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.stdin!.end();
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
