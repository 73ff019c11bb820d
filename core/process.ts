import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A supervised process ends with its launcher: the supervisor gives every
 * child an IPC channel, which closes when the launcher dies, even by
 * SIGKILL. The child then shuts down as if it got SIGTERM (draining work),
 * and exits anyway after a grace period. Called first thing in a process, so
 * a slow start (a model loading) is covered too.
 */
let watching = false;

export function exitWithParent(graceMs = 10_000): void {
  // Once per process: a second handler would send a second SIGTERM, which skips the drain.
  if (watching) return;
  watching = true;
  const leave = () => {
    process.kill(process.pid, "SIGTERM");
    // With the launcher gone nobody is left to SIGKILL a drain that hangs.
    setTimeout(() => process.exit(1), graceMs);
  };
  // A launcher that died before this line closed the channel already: no event will come.
  if (process.send && !process.connected) return leave();
  process.on("disconnect", leave);
}

/** Whether a process with this pid exists (one of another user's, which signals refuse, counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A directory of this process's own in TMPDIR, named `<prefix>-<pid>-XXXXXX`. A process killed
 * before it could remove its own (SIGKILL, the OOM killer) leaves it behind, so those of processes
 * that are gone are removed first; `removed` hears of each.
 */
export function ownTempDir(prefix: string, removed?: (dir: string, pid: number) => void): string {
  const mine = new RegExp(`^${prefix}-(\\d+)-`);
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(mine.exec(name)?.[1]);
    if (!pid || alive(pid)) continue;
    try {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
      removed?.(name, pid);
    } catch {
      // Another user's: theirs to remove.
    }
  }
  return mkdtempSync(join(tmpdir(), `${prefix}-${process.pid}-`));
}

/**
 * Points this process's TMPDIR at a directory of its own (ownTempDir), removed as the process
 * exits. LanceDB's native side keeps a directory in TMPDIR for each connection until the last
 * query object holding it is garbage-collected, which never happens at exit: a process that
 * searches a table would leave one behind at every start. Call it before the first connection.
 */
export function privateTmpdir(prefix: string): void {
  const dir = ownTempDir(prefix);
  process.env.TMPDIR = dir;
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
}
