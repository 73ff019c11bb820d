/**
 * An interrupted run resumes from its workspace: the launcher is SIGKILLed
 * mid-run (its agents end with it), and `launch --resume` finishes the run
 * without redoing judged trials or duplicating the ones in flight.
 */
import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = { ...process.env, LOG_LEVEL: "warn" };

describe("launch --resume", () => {
  it("finishes a run whose launcher was killed, once per trial", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "resume-test-"));
    try {
      const first = spawn(
        "./research-agent",
        ["launch", "--goal", "digits: reach 99.9% validation accuracy", "--max-trials", "6", "--seeds", "2", "--epochs", "30", "--no-research", "--workspace", workspace],
        { env, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      first.stdout.on("data", (d: Buffer) => (out += d.toString()));
      first.stderr.on("data", (d: Buffer) => (err += d.toString()));
      const runId = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no run started:\n${out}\n${err}`)), 120_000);
        first.stdout.on("data", () => {
          const m = /run (r[\w-]+) started/.exec(out);
          // Interrupt once two trials are judged, while others are in flight.
          if (m && (out.match(/ -> iterate/g) ?? []).length >= 2) {
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
      // Two seeds can both score 100% on digits' small validation split, so the goal may be met early.
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
