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
