/**
 * A supervised process ends with its launcher: the supervisor gives every
 * child an IPC channel, which closes when the launcher dies, even by
 * SIGKILL. The child then shuts down as if it got SIGTERM (draining work).
 */
export function exitWithParent(): void {
  process.on("disconnect", () => process.kill(process.pid, "SIGTERM"));
}
