/**
 * Keeps the swarm's processes alive on one machine: each runs as its own OS
 * process with its output in a log file, and a process that exits without
 * being asked to is restarted with a growing delay.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../core/logger.js";
import { entryArgs, REPO_ROOT } from "./entries.js";

/** How long a stopped process's output may take to drain into its log. */
const DRAIN_MS = 2_000;

export interface ProcessSpec {
  name: string;
  /** Entry file relative to the repo root (entryArgs). */
  entry: string;
  args?: string[];
  env?: Record<string, string>;
}

interface Managed {
  spec: ProcessSpec;
  child?: ChildProcess;
  restarts: number;
  log: WriteStream;
  timer?: NodeJS.Timeout;
}

export class Supervisor {
  private readonly procs = new Map<string, Managed>();
  private stopping = false;

  constructor(
    private readonly logDir: string,
    private readonly log: Logger,
    private readonly onRestart: (name: string, restarts: number) => void = () => {},
  ) {
    mkdirSync(logDir, { recursive: true });
  }

  start(spec: ProcessSpec): ChildProcess {
    const m: Managed = this.procs.get(spec.name) ?? { spec, restarts: 0, log: this.logFile(spec.name) };
    this.procs.set(spec.name, m);
    const child = spawn(process.execPath, [...entryArgs(spec.entry), ...(spec.args ?? [])], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...spec.env },
      // The IPC channel closes when the launcher dies, however it dies; children exit on that (core/process.ts).
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      // Their own process group: a Ctrl-C in the launcher's terminal reaches the launcher
      // alone, which stops them in order, instead of every agent exiting at once and being
      // restarted while the launcher writes its report.
      detached: true,
    });
    m.child = child;
    child.stdout!.pipe(m.log, { end: false });
    child.stderr!.pipe(m.log, { end: false });
    child.on("exit", (code, signal) => {
      if (this.stopping || m.child !== child) return;
      m.restarts++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(6, m.restarts - 1));
      this.log.warn({ process: spec.name, code, signal, restart_in_ms: delay }, "process exited; restarting");
      this.onRestart(spec.name, m.restarts);
      m.timer = setTimeout(() => this.start(spec), delay);
    });
    return child;
  }

  /** A process's log file; one that cannot be written says so in the launcher's log, and stops nothing. */
  private logFile(name: string): WriteStream {
    const file = createWriteStream(join(this.logDir, `${name}.log`), { flags: "a" });
    file.on("error", (err) => this.log.warn({ process: name, err: err.message }, "cannot write the process's log"));
    return file;
  }

  /** The live child of a managed process (for tests that kill one). */
  child(name: string): ChildProcess | undefined {
    return this.procs.get(name)?.child;
  }

  async stopAll(timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.procs.values()].map(async (m) => {
        clearTimeout(m.timer);
        const c = m.child;
        if (c && c.exitCode === null && c.signalCode === null) {
          const exited = new Promise((r) => c.once("exit", r));
          c.kill("SIGTERM");
          const t = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
          await exited;
          clearTimeout(t);
        }
        // Its last lines may still be in the pipes after it exited: the log ends once they are
        // drained ('close'), or after a bound where a process it left holds them open. Unpiped
        // first, so nothing is written after the end (an uncaught error in the launcher).
        if (c && !(c.stdout?.closed && c.stderr?.closed)) {
          await new Promise<void>((resolve) => {
            const bound = setTimeout(resolve, DRAIN_MS);
            c.once("close", () => (clearTimeout(bound), resolve()));
          });
        }
        c?.stdout?.unpipe(m.log);
        c?.stderr?.unpipe(m.log);
        await new Promise<void>((resolve) => m.log.end(resolve));
      }),
    );
  }
}
