/**
 * A runner in its own process, as a GPU host runs it, so that a test can stop or kill it, and
 * the processes under a pid (its workers), to tell that none outlives it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { entryArgs } from "../../deploy/entries.js";

/** Resolves once it listens on `address`; with `onLog`, it logs at info and each pino JSON line of its log is passed on. */
export async function startRunnerProcess(
  address: string,
  opts: { slots?: number; args?: string[]; env?: NodeJS.ProcessEnv; onLog?: (entry: Record<string, unknown>) => void } = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...entryArgs("gpu-runner/main.ts"), "--address", address, "--slots", String(opts.slots ?? 1), ...(opts.args ?? [])], {
    // The IPC channel: a runner outlives no test process that dies (core/process.ts).
    stdio: ["ignore", "pipe", opts.onLog ? "pipe" : "ignore", "ipc"],
    env: { ...process.env, ...opts.env, LOG_LEVEL: opts.onLog ? "info" : "error" },
  });
  if (opts.onLog) {
    createInterface({ input: child.stderr! }).on("line", (line) => {
      if (line.startsWith("{")) opts.onLog!(JSON.parse(line) as Record<string, unknown>);
    });
  }
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => line.startsWith("runner listening") && resolve());
    child.once("exit", (code) => reject(new Error(`the runner at ${address} exited (${code}) before listening`)));
  });
  return child;
}

/** Every live process under `pid` (children, theirs, ...), read from /proc; zombies count as gone. */
export function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state !== "Z") parent.set(Number(name), Number(ppid));
    } catch {
      // gone between the listing and the read
    }
  }
  const out: number[] = [];
  const todo = [pid];
  while (todo.length) {
    const p = todo.pop()!;
    for (const [child, pp] of parent) if (pp === p) (out.push(child), todo.push(child));
  }
  return out;
}

/** Which of `pids` still run (zombies do not). */
export function alive(pids: number[]): number[] {
  return pids.filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
    } catch {
      return false;
    }
  });
}
