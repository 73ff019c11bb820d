/**
 * An interrupted run resumes from its workspace: the launcher is SIGKILLed
 * mid-run (its agents end with it), and `launch --resume` finishes the run
 * without redoing judged trials or duplicating the ones in flight.
 */
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Without NODE_CHANNEL_FD: vitest's worker has an IPC channel, and a child
// that inherits the variable would take an unrelated fd for its own channel.
const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
const env = { ...inherited, LOG_LEVEL: "warn" };

/** The agents' logs, for a failure message worth reading. */
function logsOf(workspace: string): string {
  const dir = join(workspace, "logs");
  return existsSync(dir) ? readdirSync(dir).map((f) => `--- ${f}\n${readFileSync(join(dir, f), "utf8").slice(-1500)}`).join("\n") : "";
}

describe("launch --resume", () => {
  it("finishes a run whose launcher was killed, once per trial", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "resume-test-"));
    try {
      const first = spawn(
        "./research-agent",
        ["launch", "--goal", "digits: reach 99.9% validation accuracy", "--max-trials", "6", "--seeds", "3", "--epochs", "1", "--no-research", "--workspace", workspace],
        { env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      first.stdout.on("data", (d: Buffer) => (out += d.toString()));
      first.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const runId = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no progress:\n${out}\n${err}\n${logsOf(workspace)}`)), 120_000);
        first.stdout.on("data", () => {
          const m = /run (r[\w-]+) started/.exec(out);
          // Interrupt while both first trials are in flight and none is judged yet.
          if (m && /t001 assembled/.test(out)) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
      });
      first.kill("SIGKILL");
      await new Promise((r) => first.once("exit", r));

      const second = spawnSync("./research-agent", ["launch", "--resume", runId, "--workspace", workspace, "--json"], { env, encoding: "utf8", timeout: 300_000 });
      const summary = JSON.parse(second.stdout.trim().split("\n").pop()!) as { run_id: string; status: string; trials: number; registry: string };
      expect(summary.run_id).toBe(runId);
      // Three seeds can all score 100% on digits' small validation split, so the goal may be met early.
      expect(second.status, second.stderr).toBe(summary.status === "goal_achieved" ? 0 : 3);
      if (summary.status !== "goal_achieved") {
        expect(summary.status).toBe("budget_exhausted");
        expect(summary.trials).toBe(6);
      }
      const registry = JSON.parse(readFileSync(summary.registry, "utf8")) as { trial_id: string }[];
      const ids = registry.map((e) => e.trial_id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(summary.trials);
      expect(existsSync(join(workspace, "runs", runId, "report.md"))).toBe(true);
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  }, 420_000);
});
