/**
 * Runs `fn` once on the first SIGTERM or SIGINT, then exits 0 (1 if it threw).
 * A second signal while `fn` runs exits 1 at once, so a stuck drain never
 * blocks a supervisor's stop.
 */
export function onShutdown(fn: () => Promise<void> | void): void {
  let running = false;
  const handler = (signal: NodeJS.Signals) => {
    if (running) {
      process.stderr.write(`second ${signal} during shutdown: exiting now\n`);
      process.exit(1);
    }
    running = true;
    Promise.resolve()
      .then(fn)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`shutdown failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}
