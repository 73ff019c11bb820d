import { pino, type Logger } from "pino";

/**
 * pino JSON to stderr (stdout belongs to CLI output). Child loggers carry
 * run_id / trial_id so every line of a trial can be grepped out of any process.
 */
export function createLogger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return pino(
    { level: process.env.LOG_LEVEL ?? "info", base: { component, pid: process.pid, ...bindings } },
    pino.destination({ fd: 2, sync: false }),
  );
}

export type { Logger };
