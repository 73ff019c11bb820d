/**
 * A command that may take a while, run without blocking vitest's worker: a worker whose event
 * loop is held by a synchronous child for a minute misses vitest's 60 s RPC deadline
 * ("Timeout calling onTaskUpdate") and the whole run fails although every test passed.
 * Resolves with the exit status (null when killed) and the output, whatever the status.
 */
import { execFile } from "node:child_process";

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function run(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number; input?: string }): Promise<Ran> {
  const { input, ...options } = opts;
  return new Promise((done) => {
    const child = execFile(file, args, { ...options, encoding: "utf8", maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      done({ status: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
    });
    child.stdin?.end(input ?? "");
  });
}
