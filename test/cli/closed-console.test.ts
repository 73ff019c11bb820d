/**
 * A launch whose console goes away (its terminal closed, `| head` done reading) before it is
 * stopped: its next line meets a closed pipe (EPIPE). Node makes that an uncaught error that ends
 * the process at once, without stopping the swarm: the agents end with their parent
 * (core/process.ts), but the nats-server, in a process group of its own, was left running. Now
 * the launcher ignores a console that is gone and stops as it would with one, and it stops its
 * nats-server on any exit.
 */
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unwrapped } from "../helpers/markdown.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };

/** The workspace's nats-server pid when one runs (only a nats-server: a pid is reused). */
function natsAlive(workspace: string): number | undefined {
  const file = join(workspace, "swarm.json");
  const { nats_pid } = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { nats_pid?: number }) : {};
  const comm = `/proc/${nats_pid}/comm`;
  return nats_pid && existsSync(comm) && readFileSync(comm, "utf8").trim() === "nats-server" ? nats_pid : undefined;
}

describe("a launch whose console is gone", () => {
  it("still writes its report when stopped, and leaves nothing running", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "closed-console-"));
    try {
      const launch = spawn(
        "./research-agent",
        ["launch", "--goal", "digits: reach 99.9% validation accuracy", "--time-budget", "10m", "--epochs", "1", "--no-research", "--workspace", workspace],
        { env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      launch.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((r) => launch.once("exit", (code) => r(code)));
      const runId = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no run started:\n${out}\n${err}`)), 150_000);
        launch.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /run (r[\w-]+) started/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
      });
      // The reader goes away: every line the launcher writes from here meets a closed pipe.
      launch.stdout.destroy();
      launch.kill("SIGTERM");
      expect(await exited, err).toBe(143);
      expect(unwrapped(readFileSync(join(workspace, "runs", runId, "report.md"), "utf8"))).toContain("**Status:** interrupted: interrupted by SIGTERM");
      expect(natsAlive(workspace)).toBeUndefined();
      const ps = spawnSync("ps", ["-eo", "args"], { encoding: "utf8" }).stdout;
      expect(ps.split("\n").filter((l) => l.includes(workspace))).toEqual([]);
    } finally {
      const pid = natsAlive(workspace);
      if (pid) process.kill(pid, "SIGKILL");
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 300_000);
});
