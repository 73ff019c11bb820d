import { destination, pino, type Logger } from "pino";
import type { LogLevel } from "./config.js";

let level: LogLevel = "info";

/** Set once at start from the process's config (LOG_LEVEL), before loggers are created: a logger keeps the level it was created with. */
export function setLogLevel(value: LogLevel): void {
  level = value;
}

/**
 * pino JSON to stderr (stdout belongs to CLI output), or appended to `file`
 * for a process whose stderr is a person's console. Child loggers carry
 * run_id / trial_id so every line of a trial can be grepped out of any process.
 */
export function createLogger(component: string, bindings: Record<string, unknown> = {}, file?: string): Logger {
  // A file is written synchronously: a launcher ends with process.exit, which would drop what is still buffered.
  const to = file ? destination({ dest: file, mkdir: true, append: true, sync: true }) : destination({ fd: 2, sync: false });
  return pino({ level, base: { component, pid: process.pid, ...bindings } }, to);
}

export type { Logger };
