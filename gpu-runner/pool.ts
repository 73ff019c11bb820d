/**
 * A fixed number of workers (slots) and a FIFO queue of jobs waiting for one.
 * Slot 0's worker starts with the pool (start: it reports the device; a pool
 * never started, the summaries', starts it with its first job); the other
 * slots' start beside it, unawaited, and stay warm: a worker's start is
 * seconds of CPU (torch and torch._dynamo imported), and a run's first trials
 * take every slot, so a slot started on demand held its first trial back by
 * those seconds (2-3.4 s of a 12-s run on 2 cores). A worker that died (a
 * trial killed it, or it crashed) is replaced before its slot takes the next
 * job, so one bad trial costs one restart, never the service.
 *
 * A job that starts at once (EvaluateRequest.seeds_at_once: a CPU's last long training or a
 * target's confirmation whose seeds would leave a slot idle in rounds, or a target's promotion
 * whose lone seed has every core) takes a spare worker when every slot is busy: at most
 * one a slot, started the first time one is needed, warm after, and never given a queued job, so
 * that only such jobs share the cores.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../core/logger.js";
import { ResearchError } from "../core/failure.js";
import { pickSlot } from "./gpus.js";
import type { Launch } from "./sandbox.js";
import { Worker, type DeviceReport, type JobFiles, type OnEvent, type TerminalEvent, type WorkerTask } from "./worker.js";

export interface PoolOptions {
  /** The pool's name in the log: train, quick or referee. */
  name: string;
  slots: number;
  /** How slot i's worker starts, given its scratch directory and the GPU it is pinned to (undefined: all visible, "": none). */
  launch: (scratchDir: string, visibleGpus: string | undefined) => Launch;
  /** Whether the launch is sandboxed (reported by Health). */
  sandbox: boolean;
  /** The GPUs slots are spread over, round robin, one per worker; none: CPU only; undefined: leave them as they are. */
  gpus?: number;
  /** Each GPU's free memory (MB) as last read, when a job picks its slot (gpus.ts FreeGpuMemory); with several GPUs only. */
  freeMemory?: () => number[];
  scratchRoot: string;
  logger: Logger;
}

interface Waiter {
  resolve: (w: Worker) => void;
  reject: (e: unknown) => void;
}

export class WorkerPool {
  private readonly workers: Worker[];
  private readonly idle: Worker[] = [];
  private readonly spares: Worker[] = [];
  private readonly idleSpares: Worker[] = [];
  /** The GPU each worker is pinned to, by worker. */
  private readonly gpuOf = new Map<Worker, number>();
  /** Workers whose start is under way: a job that takes one waits for that start, not a second one. */
  private readonly starting = new Map<Worker, Promise<DeviceReport>>();
  private readonly queue: Waiter[] = [];
  private closed = false;
  device?: DeviceReport;

  constructor(private readonly opts: PoolOptions) {
    this.workers = Array.from({ length: opts.slots }, (_, i) => this.worker(`slot-${i}`, i));
    // Free from the start: a job starts the worker it takes (run), so a pool that is never
    // started takes jobs all the same.
    this.idle.push(...this.workers);
  }

  /** Worker `name`, pinned as slot i is. */
  private worker(name: string, i: number): Worker {
    const { gpus } = this.opts;
    const scratchDir = join(this.opts.scratchRoot, name);
    mkdirSync(scratchDir, { recursive: true });
    const visibleGpus = gpus === undefined ? undefined : gpus === 0 ? "" : String(i % gpus);
    const w = new Worker(name, this.opts.launch(scratchDir, visibleGpus), this.opts.logger, scratchDir);
    if (gpus) this.gpuOf.set(w, i % gpus);
    return w;
  }

  get sandboxed(): boolean {
    return this.opts.sandbox;
  }

  /** A worker's start (a fork server's imports: seconds of CPU), logged: which workers a runner started, and when. */
  private startWorker(w: Worker): Promise<DeviceReport> {
    let started = this.starting.get(w);
    if (!started) {
      const t0 = Date.now();
      started = w.start().then((device) => {
        this.opts.logger.info({ worker: `${this.opts.name}/${w.id}`, ms: Date.now() - t0 }, "worker started");
        return device;
      });
      this.starting.set(w, started);
      void started.finally(() => this.starting.delete(w)).catch(() => {});
    }
    return started;
  }

  /** Whether `w` serves a job now: started, its start not under way. */
  private ready(w: Worker): boolean {
    return w.alive && !this.starting.has(w);
  }

  /** Whether a job run now would start at once: a slot is free (its worker warm or not). */
  get hasIdle(): boolean {
    return !this.closed && this.idle.length > 0;
  }

  async start(): Promise<DeviceReport> {
    // Before any job: the runner serves once slot 0's worker has started. The others start
    // beside it (their imports take a core each, one that the agents starting beside them leave
    // idle) and are not awaited; a slot a job takes first waits for its start there (run).
    const first = this.startWorker(this.workers[0]!);
    for (const w of this.workers.slice(1)) {
      this.startWorker(w).catch((err: Error) => {
        if (!this.closed) this.opts.logger.warn({ worker: `${this.opts.name}/${w.id}`, err: err.message }, "worker start failed; its slot's next job starts it again");
      });
    }
    this.device = await first;
    return this.device;
  }

  stats() {
    return {
      slots: this.workers.length,
      free: this.idle.length,
      queueDepth: this.queue.length,
      ready: this.workers.filter((w) => this.ready(w)).length,
    };
  }

  private acquire(signal: AbortSignal | undefined, atOnce: boolean): Promise<Worker> {
    if (this.closed) return Promise.reject(new ResearchError("runner_unavailable", "runner is shutting down"));
    if (this.idle.length) {
      // Several GPUs: the one with the most free memory; else a warm worker before one not started yet.
      const free = this.opts.gpus && this.opts.gpus > 1 && this.opts.freeMemory ? this.opts.freeMemory() : [];
      const at = pickSlot(this.idle.map((w) => ({ gpu: this.gpuOf.get(w), warm: this.ready(w) })), free);
      return Promise.resolve(this.idle.splice(at, 1)[0]!);
    }
    const spare = atOnce && (this.idleSpares.pop() ?? this.newSpare());
    if (spare) return Promise.resolve(spare);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(new ResearchError("crash", "cancelled while queued"));
      };
      // The listener goes with the wait: an evaluation's seeds and scorings all wait on one signal,
      // and listeners left behind piled up past Node's warning threshold (11 on a GPU host).
      const settle = () => signal?.removeEventListener("abort", onAbort);
      const waiter: Waiter = { resolve: (w) => (settle(), resolve(w)), reject: (e) => (settle(), reject(e)) };
      this.queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private newSpare(): Worker | undefined {
    if (this.spares.length >= this.workers.length) return undefined;
    const w = this.worker(`spare-${this.spares.length}`, this.spares.length);
    this.spares.push(w);
    this.opts.logger.info({ worker: w.id, spares: this.spares.length }, "every slot busy: a spare worker for a job that starts at once");
    return w;
  }

  private async release(worker: Worker): Promise<void> {
    if (!worker.alive && !this.closed) {
      this.opts.logger.warn({ worker: worker.id }, "worker died; restarting it");
      try {
        await this.startWorker(worker);
      } catch (err) {
        this.opts.logger.error({ worker: worker.id, err: (err as Error).message }, "worker restart failed");
        // Keep the slot: the next job will try to start it again rather than
        // the pool shrinking forever after one bad restart.
      }
    }
    if (this.spares.includes(worker)) return void this.idleSpares.push(worker);
    const next = this.queue.shift();
    if (next) next.resolve(worker);
    else this.idle.push(worker);
  }

  /**
   * Runs a job on the next free worker (`atOnce`: a spare when no slot is free); resolves with
   * its terminal event. The spec is built when a worker is free, so time spent queued does not
   * eat into the job's wall-clock budget.
   */
  async run(
    task: WorkerTask,
    makeSpec: () => unknown,
    onEvent: OnEvent,
    signal?: AbortSignal,
    files?: JobFiles,
    atOnce = false,
  ): Promise<TerminalEvent> {
    let worker: Worker | undefined;
    try {
      worker = await this.acquire(signal, atOnce);
      if (!this.ready(worker)) await this.startWorker(worker);
      return await worker.run(task, makeSpec(), onEvent, signal, files);
    } catch (err) {
      const e = ResearchError.from(err, "runner_unavailable");
      return { kind: "failure", label: e.label, message: e.message, traceback: e.detail };
    } finally {
      if (worker) void this.release(worker);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.reject(new ResearchError("runner_unavailable", "runner is shutting down"));
    await Promise.all([...this.workers, ...this.spares].map((w) => w.stop()));
  }
}
