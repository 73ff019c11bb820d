/**
 * launch --from: a run that starts from a person's model (a model in Python, a model_config
 * file, or an earlier run's trial) trains it first as trial 0 and reports the best model
 * against it; a bad starting point is one line and exit status 2 before the run spends anything.
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/args.js";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { run } from "../helpers/run.js";
import { pairedTTest } from "../../core/stats.js";
import { checkMlflow, checkTensorBoard, checkWandb, readBack, storedRun } from "../helpers/export.js";
import { unwrapped } from "../helpers/markdown.js";

const { NODE_CHANNEL_FD: _ipc, ...inherited } = process.env;
// The hashing embedder (EMBEDDER=hashing, a choice the product offers): these runs test where a run
// starts from, not similarity, and MiniLM's server costs a launch about 8 s of CPU (the CLI and
// swarm tests keep the default).
const env = { ...inherited, LOG_LEVEL: "warn", EMBEDDER: "hashing" };
const launch = (args: string[]) => run("./research-agent", ["launch", ...args], { env, timeout: 300_000 });

const dir = mkdtempSync(join(tmpdir(), "from-test-"));
const model = join(dir, "small.yaml");
writeFileSync(model, "name: small-mlp\nlayers:\n  - type: flatten\n  - type: linear\n    out_features: 16\n  - type: activation\n    fn: relu\n");
const recipe = join(dir, "recipe.yaml");
// A weak recipe, so that the search has room above it.
writeFileSync(recipe, "optimizer: sgd\nlr: 0.05\nmomentum: 0\nepochs: 1\nbatch_size: 64\n");

// A model in Python with its size and regularisation in the constructor (8 x 8 digits).
const net = join(dir, "net.py");
const NET_SOURCE = `import torch.nn as nn


class Net(nn.Module):
    def __init__(self, num_classes=10, width=16, depth=1, dropout=0.0, batchnorm=False):
        super().__init__()
        layers, features = [nn.Flatten()], 64
        for _ in range(depth):
            layers += [nn.Linear(features, width)] + ([nn.BatchNorm1d(width)] if batchnorm else []) + [nn.ReLU(), nn.Dropout(dropout)]
            features = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(features, num_classes)

    def forward(self, x):
        return self.head(self.body(x))
`;
writeFileSync(net, NET_SOURCE);
const NET_DEFAULTS: Record<string, number | boolean> = { width: 16, depth: 1, dropout: 0, batchnorm: false };

interface Summary {
  run_id: string;
  status: string;
  best_trial: { trial_id: string } | null;
  baseline: { trial_id: string; val_accuracy: number; test_accuracy: number; val_gain: { seeds: number[]; gain: number; ci_95: [number, number] } | null } | null;
  report: string;
}

/** A file of a trial's folder in a run. */
const trialFile = (workspace: string, runId: string, trial: string, file: string) => readFileSync(join(workspace, "runs", runId, "experiments", trial, file), "utf8");
const hypothesisOf = (workspace: string, runId: string, trial: string) => trialFile(workspace, runId, trial, "hypothesis.md").split("## Hypothesis")[1]!.split("##")[0]!.trim();

/** Seed -> metric of a trial, from the run folder's results.json (the stored evaluation). */
function seedMetric(workspace: string, runId: string, trial: string, metric: string): Map<number, number> {
  const results = JSON.parse(readFileSync(join(workspace, "runs", runId, "experiments", trial, "results.json"), "utf8")) as { seed_results: { seed: number; metrics: Record<string, number> }[] };
  return new Map(results.seed_results.map((s) => [s.seed, s.metrics[metric]!]));
}

describe("launch --from", () => {
  const workspace = mkdtempSync(join(tmpdir(), "from-ws-"));
  let py: Summary;
  let argumentTrial: string;
  // The run below that streams to TensorBoard as it goes (launch --export), and where to.
  let second: Summary;
  const live = mkdtempSync(join(tmpdir(), "from-live-"));

  it.concurrent("trains a model in Python as trial 0, then searches its constructor's arguments beside its recipe", async () => {
    // Bounded by its work (10 trials, a last training of 10 epochs); the time budget leaves
    // exploration room on a loaded machine.
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", net, "--class", "Net", "--recipe", recipe, "--time-budget", "120s", "--max-trials", "10", "--last-epochs", "10", "--seeds-per-trial", "2", "--no-research", "--workspace", workspace, "--json"]);
    expect([0, 3], r.stderr).toContain(r.status);
    py = JSON.parse(r.stdout.trim().split("\n").pop()!) as Summary;
    const file = (t: string, f: string) => trialFile(workspace, py.run_id, t, f);
    const trials = readdirSync(join(workspace, "runs", py.run_id, "experiments")).filter((f) => f.startsWith(py.run_id)).sort();
    const t0 = `${py.run_id}-t000`;
    expect(parseYaml(file(t0, "model_config.yaml"))).toEqual({ name: "Net", class_name: "Net", init_kwargs: {} });
    expect(hypothesisOf(workspace, py.run_id, t0)).toBe(`the starting point, Net from ${net}, on its own recipe`);
    // Every trial of the run trains the person's source as it is, each with its own arguments.
    for (const t of trials) expect(file(t, "model_code.py"), t).toBe(NET_SOURCE);
    const edits = trials.filter((t) => /^set (width|depth|dropout|batchnorm) /.test(hypothesisOf(workspace, py.run_id, t)));
    expect(edits.length, trials.map((t) => hypothesisOf(workspace, py.run_id, t)).join("\n")).toBeGreaterThan(0);
    argumentTrial = edits[0]!;
    const [, name, from, to] = /^set (\w+) (\S+) -> (\S+) on top of/.exec(hypothesisOf(workspace, py.run_id, argumentTrial))!;
    expect(from).toBe(String(NET_DEFAULTS[name!]));
    const edited = parseYaml(file(argumentTrial, "model_config.yaml")) as { class_name: string; init_kwargs: Record<string, unknown> };
    expect(edited.init_kwargs).toEqual({ [name!]: JSON.parse(to!) });
    // The report's argument changes are the two trials' configs, defaults filled.
    const baseline = (JSON.parse(readFileSync(py.report.replace(/\.md$/, ".json"), "utf8")) as { baseline: { argument_changes: { name: string; from: unknown; to: unknown }[] } }).baseline;
    const best = py.best_trial!.trial_id;
    const bestKwargs = (parseYaml(file(best, "model_config.yaml")) as { init_kwargs?: Record<string, unknown> }).init_kwargs ?? {};
    expect(baseline.argument_changes).toEqual(
      Object.keys(bestKwargs)
        .sort()
        .map((k) => ({ name: k, from: NET_DEFAULTS[k], to: bestKwargs[k] }))
        .filter((c) => c.from !== c.to),
    );
  }, 400_000);

  it.concurrent("trains a model_config as trial 0 and reports the best model against it, seed by seed", async () => {
    const ws = mkdtempSync(join(tmpdir(), "from-yaml-"));
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", model, "--recipe", recipe, "--time-budget", "120s", "--max-trials", "6", "--last-epochs", "10", "--seeds-per-trial", "2", "--parallel", "3", "--no-research", "--workspace", ws, "--json"]);
    expect([0, 3], r.stderr).toContain(r.status);
    const first = JSON.parse(r.stdout.trim().split("\n").pop()!) as Summary;
    const t0 = `${first.run_id}-t000`;
    const trials = readdirSync(join(ws, "runs", first.run_id, "experiments")).filter((f) => f.startsWith(first.run_id));
    // Trial 0 is the model and recipe as given; trial 1 the same at the probe's fidelity.
    const config = (t: string, f: string) => trialFile(ws, first.run_id, t, f);
    expect(config(t0, "model_config.yaml")).toContain("name: small-mlp");
    expect(config(t0, "train_config.yaml")).toMatch(/optimizer: sgd[\s\S]*lr: 0.05/);
    expect(config(t0, "hypothesis.md")).toContain(`from ${model}`);
    // A third slot starts the run's own first proposal beside them: trial ids stay contiguous.
    expect(trials).toContain(`${first.run_id}-t002`);
    expect(config(`${first.run_id}-t002`, "hypothesis.md")).toContain("is a strong starting point");
    expect(first.baseline?.trial_id).toBe(t0);
    // Its test accuracy was measured with its own training; both are the stored evaluation's.
    const stored = JSON.parse(config(t0, "results.json")) as { aggregated: { test_accuracy: { mean: number } } };
    expect(first.baseline!.test_accuracy).toBe(stored.aggregated.test_accuracy.mean);
    expect(seedMetric(ws, first.run_id, t0, "test_accuracy").size).toBe(2);
    const baseVal = seedMetric(ws, first.run_id, t0, "val_accuracy");
    expect(first.baseline!.val_accuracy).toBeCloseTo([...baseVal.values()].reduce((a, b) => a + b) / baseVal.size, 10);
    const report = unwrapped(readFileSync(first.report, "utf8"));
    expect(report).toContain("## Against the starting point");
    // Its test score is the report's, not the search's: trial 0 is judged like any other.
    const rows = (JSON.parse(readFileSync(first.report.replace(/\.md$/, ".json"), "utf8")) as { trials: { trial_id: string; verdict: string }[] }).trials;
    expect(rows.find((row) => row.trial_id === t0)?.verdict).not.toBe("illegal");
    const best = first.best_trial!.trial_id;
    if (best !== t0) {
      // The gain is recomputed from the two trials' stored seeds by the rule the report states.
      const bestVal = seedMetric(ws, first.run_id, best, "val_accuracy");
      const seeds = [...baseVal.keys()].filter((s) => bestVal.has(s));
      const t = pairedTTest(seeds.map((s) => baseVal.get(s)!), seeds.map((s) => bestVal.get(s)!));
      expect(first.baseline!.val_gain!.seeds).toEqual(seeds);
      expect(first.baseline!.val_gain!.gain).toBeCloseTo(t.meanDiff, 10);
      expect(first.baseline!.val_gain!.ci_95[0]).toBeCloseTo(t.ci95[0], 10);
      // After the title a trial goes by its number in the run.
      expect(report).toContain(`The best trial \`${best.slice(first.run_id.length + 1)}\` against it, seed by seed`);
      // Its line of parents from trial 0, or where else it started (a template, when the starting point's edits fell behind).
      expect(report).toMatch(/How it got there[\s\S]*`t000` \| baseline|The best trial does not descend from trial 0: the search found it from `t\d{3}`/);
    } else expect(report).toContain("No trial beat it");
  }, 400_000);

  it("starts from an earlier run's trial: its model in Python, its arguments and its recipe", async () => {
    const short = argumentTrial.slice(py.run_id.length + 1);
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", `${py.run_id}/${short}`, "--time-budget", "45s", "--seeds-per-trial", "2", "--max-trials", "2", "--no-research", "--workspace", workspace, "--json", "--export", `tensorboard:${live}`]);
    expect([0, 3], r.stderr).toContain(r.status);
    second = JSON.parse(r.stdout.trim().split("\n").pop()!) as Summary;
    expect(second.run_id).not.toBe(py.run_id);
    const t0 = `${second.run_id}-t000`;
    const read = (runId: string, t: string, f: string) => trialFile(workspace, runId, t, f);
    expect(read(second.run_id, t0, "model_config.yaml").replace(/^name: .*$/m, "")).toBe(read(py.run_id, argumentTrial, "model_config.yaml").replace(/^name: .*$/m, ""));
    expect(read(second.run_id, t0, "train_config.yaml")).toBe(read(py.run_id, argumentTrial, "train_config.yaml"));
    expect(read(second.run_id, t0, "model_code.py")).toBe(NET_SOURCE);
  }, 300_000);

  // The finished runs above, exported: this file's runs are real and already paid for.
  it("exports its runs to TensorBoard, MLflow and W&B, where each tracker's own reader finds every trial, epoch and param stored, as a launch streamed to TensorBoard live, and its best model to ONNX", async () => {
    const out = mkdtempSync(join(tmpdir(), "from-export-"));
    const to = { tensorboard: join(out, "tb"), mlflow: join(out, "mlflow"), wandb: join(out, "wandb"), onnx: join(out, "onnx") };
    const exportRuns = (args: string[]) => run("./research-agent", ["export", ...args, "--workspace", workspace], { env, timeout: 300_000 });
    const file = join(out, "a-file");
    writeFileSync(file, "");
    // [args, stderr, status]: bad input is one line, exit status 2, before anything is written.
    const bad: [string[], string][] = [
      [["r20990101-000000-0000", "--to", "tensorboard", join(out, "none")], `no run r20990101-000000-0000 in this workspace (research-agent runs lists them)`],
      [[py.run_id, "--to", "csv", join(out, "none")], '--to must be one of tensorboard, mlflow, wandb, got "csv"'],
      [[py.run_id, join(out, "none")], "export needs --to tensorboard|mlflow|wandb (or --format torchscript|onnx|python for the best model)"],
      [[py.run_id, "--to", "mlflow"], "export needs a RUN id and a DIR (or --all DIR)"],
      [[py.run_id, "--to", "tensorboard", join(file, "tb")], `cannot make ${join(file, "tb")}: ${file} is not a folder`],
      [[py.run_id, "--to", "wandb", "http://127.0.0.1:9/"], "--to wandb writes files: give a folder, not http://127.0.0.1:9/ (only --to mlflow takes a tracking server's URI)"],
    ];
    // Side by side; the first export on a fresh machine installs .venv-export, and the others wait for it.
    const [tb, ml, wb, onnx, ...refused] = await Promise.all([
      exportRuns(["--all", "--to", "tensorboard", to.tensorboard]),
      exportRuns([py.run_id, "--to", "mlflow", to.mlflow]),
      exportRuns([py.run_id, "--to", "wandb", to.wandb]),
      exportRuns([py.run_id, "--format", "onnx", to.onnx]),
      ...bad.map(([args]) => exportRuns(args)),
    ]);
    refused.forEach((r, i) => {
      expect(r.stderr, bad[i]![0].join(" ")).toBe(`research-agent: ${bad[i]![1]}\n`);
      expect(r.status, bad[i]![0].join(" ")).toBe(EXIT.badInput);
    });
    expect(existsSync(join(out, "none"))).toBe(false);
    for (const r of [tb, ml, wb, onnx]) expect(r.status, r.stderr).toBe(0);
    // The user's own model (--from a .py) with its preprocessing, as ONNX that onnxruntime runs without torch.
    expect(onnx.stdout).toContain(`load with: onnxruntime.InferenceSession("${join(to.onnx, "model.onnx")}")`);
    const ran = await run(join(".venv-export", "bin", "python"), ["-c", `
import json, numpy as np, onnxruntime as ort
spec = json.load(open("${join(to.onnx, "inference.json")}"))
x = np.random.default_rng(0).integers(0, 17, size=[5, *spec["input"]["shape"]]).astype(spec["input"]["dtype"])
probs = ort.InferenceSession("${join(to.onnx, "model.onnx")}").run(None, {"input": x})[0]
print(json.dumps({"shape": list(probs.shape), "sums": float(np.abs(probs.sum(1) - 1).max()), "classes": len(spec["output"]["classes"])}))
`], { timeout: 60_000 });
    expect(ran.status, ran.stderr).toBe(0);
    const probs = JSON.parse(ran.stdout) as { shape: number[]; sums: number; classes: number };
    expect(probs.shape).toEqual([5, probs.classes]);
    expect(probs.sums).toBeLessThan(1e-5);
    // predict on a folder of images (8x8 digits drawn as PNGs); an empty folder is refused in one line.
    const images = join(out, "images");
    const none = join(out, "no-images");
    mkdirSync(none);
    const drawn = await run(join(".venv", "bin", "python"), ["-c", `
import os, numpy as np
from PIL import Image
os.makedirs("${images}")
for i in range(3):
    Image.fromarray(np.random.default_rng(i).integers(0, 17, size=(8, 8)).astype(np.uint8), mode="L").save(f"${images}/digit-{i}.png")
`], { timeout: 60_000 });
    expect(drawn.status, drawn.stderr).toBe(0);
    const predictOn = (folder: string) => run("./research-agent", ["predict", py.run_id, folder, "--workspace", workspace], { env, timeout: 120_000 });
    const [predicted, empty] = await Promise.all([predictOn(images), predictOn(none)]);
    expect(predicted.status, predicted.stderr).toBe(0);
    expect(predicted.stdout.trim().split("\n").map((l) => l.split(",")[0])).toEqual(["index", "digit-0.png", "digit-1.png", "digit-2.png"]);
    expect(empty.stderr).toMatch(/^research-agent: \S+no-images: no image files \(\.png, /);
    expect(empty.status).toBe(EXIT.badInput);
    // --all: both runs of the workspace.
    expect(readdirSync(to.tensorboard).sort()).toEqual(tb.stdout.split("\n").filter((l) => / trials -> /.test(l)).map((l) => l.split(":")[0]).sort());
    expect(readdirSync(to.tensorboard)).toHaveLength(2);
    expect(ml.stdout).toContain(`${py.run_id}: `);
    const state = await storedRun(workspace, py.run_id);
    expect(state.finished).toBe(true);
    const back = await readBack({ ...to, live });
    checkTensorBoard(back.tensorboard, state, readFileSync(py.report, "utf8"));
    checkMlflow(back.mlflow, state);
    checkWandb(back.wandb, state);
    // The run that streamed live (launch --export tensorboard:DIR) holds the same as an export after it.
    checkTensorBoard(back.live!, await storedRun(workspace, second.run_id), readFileSync(second.report, "utf8"));
  }, 300_000);

  it("refuses a bad starting point in one line with status 2, before anything starts", async () => {
    const ws = mkdtempSync(join(tmpdir(), "from-bad-"));
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "name: bad\nlayers:\n  - type: conv2d\n    out_channels: -3\n");
    const broken = join(dir, "broken.py");
    writeFileSync(broken, "import torch.nn as nn\nclass Net(nn.Module)\n    pass\n");
    // [flags, stderr, status]: a usage error and a bad starting point alike are bad input (EXIT.badInput).
    const cases: [string[], RegExp, number][] = [
      [["--from", join(dir, "missing.yaml")], /^research-agent: --from: no such file: .*missing\.yaml\n$/, EXIT.badInput],
      [["--from", bad], /^research-agent: --from .*bad\.yaml: invalid model_config: layers\[0\]\.out_channels: expected a positive integer\n$/, EXIT.badInput],
      [["--from", model, "--recipe", bad], /^research-agent: --recipe .*bad\.yaml: invalid train_config: .*\n$/, EXIT.badInput],
      [["--from", broken, "--class", "Net"], /^research-agent: --from .*broken\.py, line 2: SyntaxError: expected ':'\n$/, EXIT.badInput],
      [["--from", net, "--class", "Missing"], /^research-agent: --from .*net\.py: no class Missing at its top level \(it has Net\)\n$/, EXIT.badInput],
      [["--from", net], /^research-agent: --from .*net\.py is a model in Python: give --class NAME, the nn\.Module to train\n/, EXIT.badInput],
      [["--from", model, "--class", "Net"], /^research-agent: --class is for a model in Python \(--from FILE\.py\), and .*small\.yaml is a model_config\n/, EXIT.badInput],
      [["--class", "Net"], /^research-agent: --class names the nn\.Module of a model in Python: give --from FILE\.py too\n/, EXIT.badInput],
      [["--from", "r20990101-000000-0000/t003"], /^research-agent: --from r20990101-000000-0000\/t003: no trial r20990101-000000-0000-t003 in .*\n$/, EXIT.badInput],
      [["--from", "r20990101-000000-0000/t003", "--class", "Net"], /^research-agent: --class is for a model in Python \(--from FILE\.py\); r20990101-000000-0000\/t003 is a trial, which names its own class\n$/, EXIT.badInput],
      [["--recipe", recipe], /^research-agent: --recipe is the training recipe of a starting point: give --from too\n/, EXIT.badInput],
    ];
    const results = await Promise.all(cases.map(([args]) => launch(["--goal", "digits: maximise accuracy", ...args, "--workspace", ws])));
    results.forEach((r, i) => {
      expect(r.stderr, cases[i]![0].join(" ")).toMatch(cases[i]![1]);
      expect(r.status, cases[i]![0].join(" ")).toBe(cases[i]![2]);
    });
    // Nothing was started or written for any of them.
    expect(existsSync(join(ws, "nats"))).toBe(false);
  }, 300_000);

  it("refuses a starting point that does not fit the goal once the runner has described the dataset, and stops everything", async () => {
    const ws = mkdtempSync(join(tmpdir(), "from-fit-"));
    // The runner builds it on the dataset's shape (test/runner/runner.test.ts has each way it can fail).
    const seven = join(dir, "seven.py");
    writeFileSync(seven, NET_SOURCE.replace("num_classes=10", "num_classes=7"));
    const r = await launch(["--goal", "digits: maximise accuracy", "--from", seven, "--class", "Net", "--workspace", ws]);
    expect(r.status, r.stderr).toBe(EXIT.badInput);
    expect(r.stderr).toMatch(/^research-agent: --from .*seven\.py: does not build for digits: .*forward returned shape \[1, 7\], expected \[1, 10\] \(batch, num_classes\)\n$/);
    const { nats_pid } = JSON.parse(readFileSync(join(ws, "swarm.json"), "utf8")) as { nats_pid: number };
    expect(existsSync(`/proc/${nats_pid}`) && readFileSync(`/proc/${nats_pid}/comm`, "utf8").trim() === "nats-server").toBe(false);
  }, 300_000);
});
