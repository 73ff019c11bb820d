/**
 * The signal task, added through the task registry (core/tasks/signal.ts and its Python twin),
 * through the whole swarm: a CSV of sequences and a folder of .npy arrays, each launched as a
 * person launches a goal, reach their target on the task's own templates; a goal that lacks
 * what its file needs is one line before anything starts.
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/args.js";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { reportOf, summaryOf } from "../helpers/report.js";
import { run } from "../helpers/run.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
// These runs test a task, not similarity: the hashing embedder spares each launch MiniLM's start.
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };
const PYTHON = process.env.RUNNER_PYTHON ?? DEFAULT_PYTHON;
const dir = mkdtempSync(join(tmpdir(), "signal-test-"));

/** MNIST-1D-style signals (bench/signals.py): 800 training and 200 test sequences of 40 steps, ten classes. */
async function signals(format: "csv" | "npy"): Promise<string> {
  const out = join(dir, format);
  const r = await run(PYTHON, ["bench/signals.py", out, "--format", format, "--train", "800", "--test", "200", "--seed", "5"], { timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return out;
}

describe("a signal goal", () => {
  it("reaches its target from a CSV and from a folder of arrays, on the task's own templates", async () => {
    const [csv, npy] = await Promise.all([signals("csv"), signals("npy")]);
    const launch = (goal: string) =>
      run("./research-agent", ["launch", "--goal", goal, "--time-budget", "90s", "--seeds-per-trial", "2", "--no-research", "--workspace", mkdtempSync(join(tmpdir(), "signal-ws-")), "--json"], {
        env,
        timeout: 300_000,
      });
    // Side by side: each mostly waits on its swarm's start and its seconds of training.
    const runs = await Promise.all([launch(`signal:${csv} target=label: reach 40% validation accuracy`), launch(`signal:${npy}: reach 40% validation accuracy`)]);
    for (const r of runs) {
      expect(r.status, r.stderr).toBe(0);
      const s = summaryOf(r.stdout);
      expect(s.status).toBe("goal_achieved");
      const registry = JSON.parse(readFileSync(s.registry, "utf8")) as { model_name: string; dataset: string }[];
      // Every model is one of the task's families, or an edit of one.
      expect(registry.length).toBeGreaterThan(1);
      expect(registry.filter((e) => e.dataset !== "signal" || !/^(cnn1d|gru1d)\b/.test(e.model_name))).toEqual([]);
      expect(reportOf(s).trials.filter((t) => t.best)).toHaveLength(1);
      expect(s.best_trial!.test_accuracy).toBeGreaterThan(0.2);
      expect(existsSync(s.report)).toBe(true);
    }
  }, 300_000);

  it("says in one line, before anything starts, what a goal's file lacks", async () => {
    const csv = join(dir, "bad");
    const cases: [string, string][] = [
      [`signal:${join(dir, "none.csv")} target=label: maximise accuracy`, `signal: no file or folder ${join(dir, "none.csv")}`],
      [`signal:${import.meta.filename}: maximise accuracy`, `signal needs its class column for ${import.meta.filename}`],
      [`signal:${csv}`, "cannot understand the goal"],
    ];
    const ran = await Promise.all(cases.map(([goal]) => run("./research-agent", ["launch", "--goal", goal, "--workspace", join(dir, "never")], { env, timeout: 180_000 })));
    cases.forEach(([goal, message], i) => {
      expect(ran[i]!.status, goal).toBe(EXIT.badInput);
      expect(ran[i]!.stderr.trim().split("\n"), goal).toHaveLength(1);
      expect(ran[i]!.stderr, goal).toContain(message);
    });
    expect(existsSync(join(dir, "never"))).toBe(false);
  }, 240_000);
});
