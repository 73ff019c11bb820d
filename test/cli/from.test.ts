/**
 * launch --from: a run that starts from a person's model (a model_config file, or an earlier
 * run's trial) trains it first as trial 0 and reports the best model against it; a bad
 * starting point is one line and exit status 2 before the run spends anything.
 */
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../helpers/run.js";
import { pairedTTest } from "../../core/stats.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
const env = { ...inherited, LOG_LEVEL: "warn" };
const launch = (args: string[]) => run("./research-agent", ["launch", ...args], { env, timeout: 300_000 });

const dir = mkdtempSync(join(tmpdir(), "from-test-"));
const model = join(dir, "small.yaml");
writeFileSync(model, "name: small-mlp\nlayers:\n  - type: flatten\n  - type: linear\n    out_features: 16\n  - type: activation\n    fn: relu\n");
const recipe = join(dir, "recipe.yaml");
// A weak recipe, so that the search has room above it.
writeFileSync(recipe, "optimizer: sgd\nlr: 0.05\nmomentum: 0\nepochs: 1\nbatch_size: 64\n");

interface Summary {
  run_id: string;
  status: string;
  best_trial: { trial_id: string } | null;
  baseline: { trial_id: string; val_accuracy: number; test_accuracy: number; val_gain: { seeds: number[]; gain: number; ci_95: [number, number] } | null } | null;
  report: string;
}

/** Seed -> metric of a trial, from the run folder's results.json (the stored evaluation). */
function seedMetric(workspace: string, runId: string, trial: string, metric: string): Map<number, number> {
  const results = JSON.parse(readFileSync(join(workspace, "runs", runId, "experiments", trial, "results.json"), "utf8")) as { seed_results: { seed: number; metrics: Record<string, number> }[] };
  return new Map(results.seed_results.map((s) => [s.seed, s.metrics[metric]!]));
}

describe("launch --from", () => {
  const workspace = mkdtempSync(join(tmpdir(), "from-ws-"));
  let first: Summary;

  it("trains the starting point first as trial 0 and reports the best model against it, seed by seed", async () => {
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", model, "--recipe", recipe, "--time-budget", "75s", "--seeds", "2", "--parallel", "3", "--no-research", "--workspace", workspace, "--json"]);
    expect([0, 3], r.stderr).toContain(r.status);
    first = JSON.parse(r.stdout.trim().split("\n").pop()!) as Summary;
    const t0 = `${first.run_id}-t000`;
    const trials = readdirSync(join(workspace, "runs", first.run_id, "experiments")).filter((f) => f.startsWith(first.run_id));
    // Trial 0 is the model and recipe as given; trial 1 the same at the probe's fidelity.
    const config = (t: string, f: string) => readFileSync(join(workspace, "runs", first.run_id, "experiments", t, f), "utf8");
    expect(config(t0, "model_config.yaml")).toContain("name: small-mlp");
    expect(config(t0, "train_config.yaml")).toMatch(/optimizer: sgd[\s\S]*lr: 0.05/);
    expect(config(t0, "hypothesis.md")).toContain(`from ${model}`);
    // A third slot starts the run's own first proposal beside them: trial ids stay contiguous.
    expect(trials).toContain(`${first.run_id}-t002`);
    expect(config(`${first.run_id}-t002`, "hypothesis.md")).toContain("is a strong starting point");
    expect(first.baseline?.trial_id).toBe(t0);
    // Its test accuracy was measured with its own training; both are the stored evaluation's.
    const stored = JSON.parse(readFileSync(join(workspace, "runs", first.run_id, "experiments", t0, "results.json"), "utf8")) as { aggregated: { test_accuracy: { mean: number } } };
    expect(first.baseline!.test_accuracy).toBe(stored.aggregated.test_accuracy.mean);
    expect(seedMetric(workspace, first.run_id, t0, "test_accuracy").size).toBe(2);
    const baseVal = seedMetric(workspace, first.run_id, t0, "val_accuracy");
    expect(first.baseline!.val_accuracy).toBeCloseTo([...baseVal.values()].reduce((a, b) => a + b) / baseVal.size, 10);
    const report = readFileSync(first.report, "utf8");
    expect(report).toContain("## Against the starting point");
    // Its test score is the report's, not the search's: trial 0 is judged like any other.
    const rows = (JSON.parse(readFileSync(first.report.replace(/\.md$/, ".json"), "utf8")) as { trials: { trial_id: string; verdict: string }[] }).trials;
    expect(rows.find((row) => row.trial_id === t0)?.verdict).not.toBe("illegal");
    const best = first.best_trial!.trial_id;
    if (best !== t0) {
      // The gain is recomputed from the two trials' stored seeds by the rule the report states.
      const bestVal = seedMetric(workspace, first.run_id, best, "val_accuracy");
      const seeds = [...baseVal.keys()].filter((s) => bestVal.has(s));
      const t = pairedTTest(seeds.map((s) => baseVal.get(s)!), seeds.map((s) => bestVal.get(s)!));
      expect(first.baseline!.val_gain!.seeds).toEqual(seeds);
      expect(first.baseline!.val_gain!.gain).toBeCloseTo(t.meanDiff, 10);
      expect(first.baseline!.val_gain!.ci_95[0]).toBeCloseTo(t.ci95[0], 10);
      expect(report).toContain(`The best trial \`${best}\` against it, seed by seed`);
      // Its line of parents from trial 0, or where else it started (a template, when the starting point's edits fell behind).
      expect(report).toMatch(/How it got there[\s\S]*`[\w-]+-t000` \| baseline|The best trial does not descend from trial 0: the search found it from `[\w-]+-t\d{3}`/);
    } else expect(report).toContain("No trial beat it");
  }, 400_000);

  it("starts from an earlier run's trial: its model and its recipe", async () => {
    const best = first.best_trial!.trial_id;
    const short = best.slice(first.run_id.length + 1);
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", `${first.run_id}/${short}`, "--time-budget", "45s", "--seeds", "2", "--max-trials", "2", "--no-research", "--workspace", workspace, "--json"]);
    expect([0, 3], r.stderr).toContain(r.status);
    const second = JSON.parse(r.stdout.trim().split("\n").pop()!) as Summary;
    expect(second.run_id).not.toBe(first.run_id);
    const read = (runId: string, t: string, f: string) => readFileSync(join(workspace, "runs", runId, "experiments", t, f), "utf8");
    expect(read(second.run_id, `${second.run_id}-t000`, "model_config.yaml").replace(/^name: .*$/m, "")).toBe(read(first.run_id, best, "model_config.yaml").replace(/^name: .*$/m, ""));
    expect(read(second.run_id, `${second.run_id}-t000`, "train_config.yaml")).toBe(read(first.run_id, best, "train_config.yaml"));
  }, 300_000);

  it("refuses a bad starting point in one line with status 2, before anything starts", async () => {
    const ws = mkdtempSync(join(tmpdir(), "from-bad-"));
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "name: bad\nlayers:\n  - type: conv2d\n    out_channels: -3\n");
    const py = join(dir, "net.py");
    writeFileSync(py, "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n");
    const cases: [string[], RegExp][] = [
      [["--from", join(dir, "missing.yaml")], /^research-agent: --from: no such file: .*missing\.yaml\n$/],
      [["--from", bad], /^research-agent: --from .*bad\.yaml: invalid model_config: layers\[0\]\.out_channels: expected a positive integer\n$/],
      [["--from", model, "--recipe", bad], /^research-agent: --recipe .*bad\.yaml: invalid train_config: .*\n$/],
      [["--from", py], /^research-agent: --from .*net\.py: a model's Python file is not a starting point yet; .*\n$/],
      [["--from", "r20990101-000000-0000/t003"], /^research-agent: --from r20990101-000000-0000\/t003: no trial r20990101-000000-0000-t003 in .*\n$/],
      [["--recipe", recipe], /^research-agent: --recipe is the training recipe of a starting point: give --from too\n$/],
    ];
    const results = await Promise.all(cases.map(([args]) => launch(["--goal", "digits: maximise accuracy", ...args, "--workspace", ws])));
    results.forEach((r, i) => {
      expect(r.stderr, cases[i]![0].join(" ")).toMatch(cases[i]![1]);
      expect(r.status).toBe(cases[i]![0][0] === "--recipe" ? 1 : 2);
    });
    // Nothing was started or written for any of them.
    expect(existsSync(join(ws, "nats"))).toBe(false);
  }, 300_000);

  it("refuses a starting point that does not fit the goal once the runner has described the dataset, and stops everything", async () => {
    const ws = mkdtempSync(join(tmpdir(), "from-fit-"));
    const big = join(dir, "big.yaml");
    writeFileSync(big, "name: big\nlayers:\n  - type: flatten\n  - type: linear\n    out_features: 512\n");
    const r = await launch(["--goal", "digits: maximise accuracy, under 5000 parameters", "--from", big, "--workspace", ws]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^research-agent: --from .*big\.yaml: 38,\d{3} parameters exceed the goal's limit of 5,000\n$/);
    const { nats_pid } = JSON.parse(readFileSync(join(ws, "swarm.json"), "utf8")) as { nats_pid: number };
    expect(existsSync(`/proc/${nats_pid}`) && readFileSync(`/proc/${nats_pid}/comm`, "utf8").trim() === "nats-server").toBe(false);
  }, 300_000);
});
