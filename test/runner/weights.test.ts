/**
 * Weights the runner keeps: which it keeps, and how the best trial's leave it
 * over gRPC for the run folder (a real runner with real torch, real files,
 * and a Python that loads them into the model's class).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHUNK_BYTES, KEPT_PER_RUN, WeightStore } from "../../gpu-runner/weights.js";
import type { Standing } from "../../core/ranking.js";
import { planEvaluation } from "../../gpu-runner/request.js";
import { ResearchError } from "../../core/failure.js";
import { DEFAULT_PYTHON } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { EvaluateRequestSchema, type EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { Decision, EventSchema, RunStatus, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { connectRunner, downloadWeights, evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { currentWeightsFile, writeArtifacts } from "../../lineage-store/artifacts.js";
import type { EventInit } from "../../bus/index.js";
import { RUN, state } from "../agents/helpers.js";
import { run } from "../helpers/run.js";
import { unwrapped } from "../helpers/markdown.js";

let root: string;
afterEach(() => root && rmSync(root, { recursive: true, force: true }));

function kept(store: WeightStore, run: string, trial: string, standing: Standing | undefined) {
  writeFileSync(store.file(run, trial, 0), "weights");
  store.settle(run, trial, standing);
}
const three = (ciLow: number): Standing => ({ seeds: 3, ciLow, valExamples: 6000 });

describe("kept weights", () => {
  it("keeps each run's best trials by the run's rule for best, and drops failures", () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    const store = new WeightStore(root);
    const lows = [0.8, 0.9, 0.85, 0.7, 0.95, 0.88, 0.6];
    lows.forEach((m, i) => kept(store, "r1", `t${i}`, three(m)));
    kept(store, "r1", "failed", undefined);
    const held = lows.map((_, i) => `t${i}`).filter((t) => store.has("r1", t, 0));
    expect(held).toHaveLength(KEPT_PER_RUN);
    expect(held.sort()).toEqual(["t0", "t1", "t2", "t4", "t5"]);
    expect(store.has("r1", "failed", 0)).toBe(false);
    // Another run's trials do not compete with these.
    kept(store, "r2", "t0", three(0.1));
    expect(store.has("r2", "t0", 0)).toBe(true);
    expect(store.has("r1", "t1", 0)).toBe(true);
  });

  it("keeps what an evaluation kept when a second one of the same trial fails or is cancelled", () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    const store = new WeightStore(root);
    kept(store, "r", "best", three(0.92));
    // A redelivered trial's second evaluation, cancelled at the run's reserve.
    store.settle("r", "best", undefined);
    expect(store.has("r", "best", 0)).toBe(true);
  });

  it("keeps a three-seed best behind one-seed probes with higher bounds (a digits run lost its test confirmation so)", () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    const store = new WeightStore(root);
    kept(store, "r", "best", three(0.9522));
    for (let i = 0; i < 2 * KEPT_PER_RUN; i++) kept(store, "r", `probe${i}`, { seeds: 1, ciLow: 0.97 + i / 1000, valExamples: 300 });
    expect(store.has("r", "best", 0)).toBe(true);
  });

  it("ids from the wire cannot reach outside the store", () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    const store = new WeightStore(join(root, "store"));
    expect(store.file("../..", "../../etc", 0).startsWith(join(root, "store"))).toBe(true);
  });

  it("refuses a request that both keeps weights and loads them", () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    const req = create(EvaluateRequestSchema, {
      trialId: "t", model: { code: "x", className: "Net" }, dataset: { name: "digits" }, keepWeights: true, weightsOf: "t0",
    });
    expect(() => planEvaluation(req, [])).toThrow(ResearchError);
    expect(() => planEvaluation(req, [])).toThrow(/keep_weights and weights_of exclude each other/);
  });
});

// 3.1M parameters, about the GPU's ResNet-9 (12 MB in fp32), so a seed's file spans several chunks;
// on digits' 8x8 images one epoch of it trains in a moment on a CPU.
const WIDE_NET = `
import torch.nn as nn

class WideNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 40_000), nn.BatchNorm1d(40_000), nn.ReLU(), nn.Linear(40_000, num_classes))

    def forward(self, x):
        return self.net(x)
`;

/**
 * Python that reads the raw digits of the validation split the request's evaluation scored (as
 * gpu-runner/request.ts fills its spec: subset 300, the default validation fraction) into
 * `raw` and `val`, through the runner's own loader.
 */
const DIGITS_VAL = `import sys
sys.path.insert(0, ${JSON.stringify(join(import.meta.dirname, "..", "..", "gpu-runner", "python"))})
import datasets
spec_ds = {"name": "digits", "data_dir": "", "subset": 300, "val_fraction": 0.0, "split_seed": 0, "target_column": "",
           "shape": [], "num_classes": 0, "difficulty": 0.0, "test_subset": 0, "task": "classification"}
raw = datasets.load(spec_ds)
val = datasets.split(raw, spec_ds).val`;

// Loads every seed's file the way the report says, into the class of the exported code, and
// checks it is trained: no parameter equals a fresh model's (into `loaded`, by file).
const LOAD = `
import json, sys, torch
sys.path.insert(0, "src/models")
from current_model import WideNet
loaded = {}
for path in sys.argv[1:]:
    model = WideNet()
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model.eval()
    trained = model.state_dict()
    loaded[path] = {"params": sum(p.numel() for p in model.parameters()),
                    "changed": all(not torch.equal(fresh[k], trained[k]) for k in ("net.1.weight", "net.4.weight")),
                    "logits": list(model(torch.zeros(2, 1, 8, 8)).shape)}
`;

/** An address nothing listens on any more. */
async function closedAddress(): Promise<string> {
  const server = await new Promise<Server>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return `127.0.0.1:${port}`;
}

describe("the best trial's weights, from the runner into the run folder", () => {
  let runner: RunningRunner;
  let client: RunnerClient;
  let result: EvalResult;
  const log = createLogger("test-weights");
  log.level = "silent";
  const request = {
    runId: RUN,
    trialId: "best",
    model: { code: WIDE_NET, className: "WideNet" },
    dataset: { name: "digits", subset: 300 },
    recipe: { epochs: 1, batchSize: 64 },
    seeds: 2,
    keepWeights: true,
    budget: { timeBudgetS: 120 },
  } satisfies MessageInitShape<typeof EvaluateRequestSchema>;

  /** The run folder the weights' checks below share: written by the first, read by the next two. */
  let runDir: string;
  /** The validation labels, in order, of the inputs the export check writes for predict. */
  let truth: string[] = [];

  /** A finished run whose best trial is `trialId`, with the evaluation's real seeds and a 600 s clock. */
  function finishedRun(trialId: string, startedAtMs = Date.now()) {
    const events: EventInit[] = [
      { runId: RUN, emittedAtMs: BigInt(startedAtMs), body: { case: "runStarted", value: { goal: { dataset: "digits", timeBudgetS: 600 } } } },
      { runId: RUN, trialId, body: { case: "trialProposed", value: { hypothesis: "wide" } } },
      { runId: RUN, trialId, body: { case: "trialAssembled", value: { code: WIDE_NET, request: { ...request, trialId } } } },
      { runId: RUN, trialId, body: { case: "trialEvaluated", value: { result } } },
      { runId: RUN, trialId, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.STOP } } },
      { runId: RUN, body: { case: "runFinished", value: { status: RunStatus.COMPLETED, bestTrialId: trialId } } },
    ];
    return { state: state(events), finished: create(EventSchema, events.at(-1)!) as Event };
  }

  beforeAll(async () => {
    runner = await startRunner({ slots: 2, logger: log });
    client = connectRunner(runner.address);
    result = await evaluateToResult(client, request);
  });

  afterAll(async () => {
    client?.close();
    await runner?.close();
    if (runDir) rmSync(runDir, { recursive: true, force: true });
  });

  it("streams each seed in chunks under gRPC's 4 MB limit, and the files load into the exported class with torch", async () => {
    const chunks: { seed: number; size: number; length: number }[] = [];
    for await (const c of client.fetchWeights({ runId: RUN, trialId: "best" })) chunks.push({ seed: c.seed, size: Number(c.size), length: c.data.length });
    expect(CHUNK_BYTES).toBeLessThan(4 * 1024 * 1024);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(CHUNK_BYTES);
    const seeds = result.seedResults.map((s) => s.seed);
    expect([...new Set(chunks.map((c) => c.seed))]).toEqual(seeds);
    for (const seed of seeds) {
      const mine = chunks.filter((c) => c.seed === seed);
      expect(mine.length).toBeGreaterThan(1);
      expect(mine.reduce((n, c) => n + c.length, 0)).toBe(mine[0]!.size);
    }

    // What the lineage store does when a run finishes: code, weights and report into the run folder.
    const root = (runDir = mkdtempSync(join(tmpdir(), "weights-run-")));
    const { state: ended, finished } = finishedRun("best");
    const t0 = Date.now();
    await writeArtifacts(root, ended, finished, { runners: [client], log });
    const ms = Date.now() - t0;
    const files = seeds.map((s) => currentWeightsFile(s));
    expect(files).toEqual(seeds.map((s) => `src/models/current_model_seed-${s}.pt`));
    expect(readdirSync(join(root, "src/models")).sort()).toEqual(["current_model.py", "inference.json", ...files.map((f) => f.slice("src/models/".length))].sort());
    const report = JSON.parse(readFileSync(join(root, "report.json"), "utf8")) as { outcome: { best_trial: { weights: { files: { path: string; bytes: number }[]; failure: unknown; seconds: number } } } };
    const weights = report.outcome.best_trial.weights;
    expect(weights.failure).toBeNull();
    expect(weights.files.map((f) => f.path)).toEqual(files);
    expect(weights.files[0]!.bytes).toBeGreaterThan(12_000_000);
    console.log(`weights: ${weights.files.map((f) => f.bytes).join(" + ")} bytes fetched in ${(weights.seconds * 1000).toFixed(0)} ms (artifacts written in ${ms} ms)`);
    const markdown = readFileSync(join(root, "report.md"), "utf8");
    expect(markdown).toContain(`model.load_state_dict(torch.load("${files[0]}", map_location="cpu"))`);

    // The report's snippet, as a person runs it from the run folder, predicts what the run scored:
    // seed 0's validation accuracy again from the raw digits of the runner's own split (DIGITS_VAL),
    // through the snippet's predict (the spec's standardisation, its class names). Fed unstandardised, as
    // torchvision's ToTensor would give them, it scores otherwise without an error.
    // One Python for both checks: each start imports torch, seconds of a loaded machine's CPU.
    const snippet = unwrapped(markdown).split("```python\n")[1]!.split("  ```")[0]!.replace(/^ {2}/gm, "");
    const check = `${LOAD}
${snippet}
${DIGITS_VAL}
x, y = torch.from_numpy(raw.x_train[val]), raw.y_train[val]
names = predict(x)
truth = [raw.class_names[i] for i in y]
with torch.no_grad():
    unscaled = model(x.float() / 255).argmax(1).tolist()
print(json.dumps({"loaded": loaded, "accuracy": sum(a == b for a, b in zip(names, truth)) / len(truth),
                  "unstandardised": sum(int(a) == int(b) for a, b in zip(unscaled, y)) / len(truth)}))
`;
    const predicted = await run(DEFAULT_PYTHON, ["-c", check, ...files], { cwd: root, timeout: 60_000 });
    expect(predicted.status, predicted.stderr).toBe(0);
    const scores = JSON.parse(predicted.stdout) as { loaded: Record<string, unknown>; accuracy: number; unstandardised: number };
    for (const f of files) expect(scores.loaded[f]).toEqual({ params: 64 * 40_000 + 40_000 + 2 * 40_000 + 40_000 * 10 + 10, changed: true, logits: [2, 10] });
    const seed0 = result.seedResults.find((r) => r.seed === 0)!;
    // At most one near-tie apart: the run scored in batches of 256, the check in one.
    expect(Math.abs(scores.accuracy - seed0.metrics.val_accuracy!)).toBeLessThanOrEqual(1 / seed0.valExamples + 1e-9);
    expect(scores.unstandardised).not.toBe(scores.accuracy);
  });

  it("exports the best model as TorchScript, ONNX and Python, each giving what the run scored", async () => {
    const root = runDir;
    const seed0 = result.seedResults.find((r) => r.seed === 0)!;
    const seeds = result.seedResults.map((s) => s.seed);
    // The best model as one TorchScript file, its preprocessing inside: what seed 0's model scored,
    // loaded by torch alone from raw digits; the ensemble of both seeds as a file too.
    const exported = join(root, "exported");
    // One seed's model and the ensemble as TorchScript; the ensemble in the other formats too (which
    // seeds go in is the same code whatever the format: export_model.build).
    const exports = [["torchscript", "--seed", "0"], ["torchscript"], ["onnx"], ["python"]];
    for (const [format, ...seedArgs] of exports) {
      const out = await run(DEFAULT_PYTHON, [join(import.meta.dirname, "..", "..", "lineage-store", "export_model.py"), root, join(exported, seedArgs.length ? "seed-0" : "ensemble"), "--format", format!, ...seedArgs], { timeout: 120_000 });
      expect(out.status, out.stderr).toBe(0);
    }
    const scripted = await run(DEFAULT_PYTHON, ["-c", `
import json, sys, torch
${DIGITS_VAL}
x, y = torch.from_numpy(raw.x_train[val]), torch.from_numpy(raw.y_train[val])
out = {}
saved = {"x": raw.x_train[val], "y": raw.y_train[val]}
for name in ("seed-0", "ensemble"):
    model = torch.jit.load(f"exported/{name}/model.torchscript.pt")
    probs = model(x)
    saved[name] = probs.detach().numpy()
    out[name] = {"accuracy": (probs.argmax(1) == y).float().mean().item(), "sums": probs.sum(1).sub(1).abs().max().item(),
                 "classes": json.load(open(f"exported/{name}/inference.json"))["output"]["classes"]}
# What the ONNX files must reproduce, read in a Python without torch below.
import numpy as np
np.savez("onnx-check.npz", **saved)
# predict's inputs (the next check): the same raw digits as an .npz, a CSV of flattened rows and
# 8x8 grayscale PNGs holding the raw values, the last one at twice the size (resized back on reading).
np.savez("val.npz", x=raw.x_train[val])
from PIL import Image
import os
os.makedirs("images", exist_ok=True)
for i, image in enumerate(raw.x_train[val].reshape(len(val), 8, 8).astype(np.uint8)):
    picture = Image.fromarray(image, mode="L")
    (picture.resize((16, 16), Image.NEAREST) if i == len(val) - 1 else picture).save(f"images/{i:04d}.png")
np.savetxt("val.csv", raw.x_train[val].reshape(len(val), -1), fmt="%d", delimiter=",", header=",".join(f"p{i}" for i in range(64)), comments="")
print(json.dumps({"models": out, "truth": [raw.class_names[i] for i in raw.y_train[val]]}))
`], { cwd: root, timeout: 60_000 });
    expect(scripted.status, scripted.stderr).toBe(0);
    const { models, truth: labels } = JSON.parse(scripted.stdout) as { models: Record<string, { accuracy: number; sums: number; classes: string[] }>; truth: string[] };
    truth = labels;
    expect(Math.abs(models["seed-0"]!.accuracy - seed0.metrics.val_accuracy!)).toBeLessThanOrEqual(1 / seed0.valExamples + 1e-9);
    for (const m of Object.values(models)) {
      expect(m.sums).toBeLessThan(1e-5); // probabilities
      expect(m.classes).toEqual(result.classNames);
    }

    // model.py with its weights, copied alone to a folder of its own and imported in a Python that
    // has torch and nothing of this repository's: the TorchScript files' predictions, every one.
    const alone = mkdtempSync(join(tmpdir(), "exported-python-"));
    cpSync(join(exported, "ensemble"), join(alone, "ensemble"), { recursive: true });
    const imported = await run(DEFAULT_PYTHON, ["-I", "-c", `
import importlib.util, json, sys, numpy as np, torch
d = np.load(${JSON.stringify(join(root, "onnx-check.npz"))})
out = {}
for name in ("ensemble",):
    spec = importlib.util.spec_from_file_location("model_" + name.replace("-", "_"), f"{name}/model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load()
    with torch.no_grad():
        probs = model(torch.from_numpy(d["x"]).float()).numpy()
    out[name] = {"same": bool((probs.argmax(1) == d[name].argmax(1)).all()), "diff": float(np.abs(probs - d[name]).max()), "models": len(model.models)}
print(json.dumps(out))
`], { cwd: alone, timeout: 60_000 });
    expect(imported.status, imported.stderr).toBe(0);
    const fromSource = JSON.parse(imported.stdout) as Record<string, { same: boolean; diff: number; models: number }>;
    expect(fromSource.ensemble!.models).toBe(seeds.length);
    for (const [name, r] of Object.entries(fromSource)) {
      expect(r.same, name).toBe(true);
      expect(r.diff, name).toBeLessThan(1e-5);
    }

    // The ONNX files in a Python with onnxruntime and no torch (.venv-export), fed the raw digits
    // as inference.json says (shape, dtype): the TorchScript files' predictions, every one, any batch size.
    const onnx = await run(join(import.meta.dirname, "..", "..", ".venv-export", "bin", "python"), ["-c", `
import importlib.util, json, numpy as np, onnxruntime as ort
assert importlib.util.find_spec("torch") is None
d = np.load("onnx-check.npz")
out = {}
for name in ("ensemble",):
    spec = json.load(open(f"exported/{name}/inference.json"))["input"]
    session = ort.InferenceSession(f"exported/{name}/model.onnx")
    x = d["x"].astype(spec["dtype"])
    probs = np.concatenate([session.run(None, {"input": x[:7]})[0], session.run(None, {"input": x[7:]})[0]])
    out[name] = {"same": bool((probs.argmax(1) == d[name].argmax(1)).all()), "diff": float(np.abs(probs - d[name]).max()),
                 "accuracy": float((probs.argmax(1) == d["y"]).mean())}
print(json.dumps(out))
`], { cwd: root, timeout: 60_000 });
    expect(onnx.status, onnx.stderr).toBe(0);
    const ran = JSON.parse(onnx.stdout) as Record<string, { same: boolean; diff: number; accuracy: number }>;
    for (const [name, r] of Object.entries(ran)) {
      expect(r.same, name).toBe(true);
      expect(r.diff, name).toBeLessThan(1e-4);
      expect(r.accuracy, name).toBeCloseTo(models[name]!.accuracy, 6); // torch's mean in float32
    }

  });

  it("predicts from an .npz, a CSV and a folder of images what the run scored, seed 0's model", async () => {
    const seed0 = result.seedResults.find((r) => r.seed === 0)!;
    const root = runDir;
    for (const file of ["val.npz", "val.csv", "images"]) {
      const predicted = await run(DEFAULT_PYTHON, [join(import.meta.dirname, "..", "..", "lineage-store", "predict_model.py"), root, join(root, file), "--seed", "0"], { timeout: 60_000 });
      expect(predicted.status, predicted.stderr).toBe(0);
      const [header, ...rows] = predicted.stdout.trim().split("\n");
      expect(header).toBe("index,prediction,probability");
      const names = rows.map((r) => r.split(",")[1]);
      // A folder's rows are its files by name; the one at twice the size was resized back (said on stderr).
      if (file === "images") {
        expect(rows.map((r) => r.split(",")[0])).toEqual(truth.map((_, i) => `${String(i).padStart(4, "0")}.png`));
        expect(predicted.stderr).toContain(`predict: 1 of ${truth.length} images resized to 8x8, the model's input`);
      }
      const accuracy = names.filter((n, i) => n === truth[i]).length / truth.length;
      expect(Math.abs(accuracy - seed0.metrics.val_accuracy!), file).toBeLessThanOrEqual(1 / seed0.valExamples + 1e-9);
    }
  });

  it("leaves no file behind when a stream is cut, and takes the weights from whichever runner has them", async () => {
    root = mkdtempSync(join(tmpdir(), "weights-run-"));
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 20);
    const cut = await downloadWeights(client, { runId: RUN, trialId: "best" }, (seed) => join(root, `seed-${seed}.pt`), { signal: abort.signal }).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(ResearchError);
    expect(readdirSync(root)).toEqual([]);

    const gone = connectRunner(await closedAddress());
    const { state: ended, finished } = finishedRun("best");
    await writeArtifacts(root, ended, finished, { runners: [gone, client], log });
    gone.close();
    for (const s of result.seedResults) expect(existsSync(join(root, currentWeightsFile(s.seed)))).toBe(true);
  });

  it("starts another run's training from them, seed by seed, and refuses weights it does not hold before training", async () => {
    root = mkdtempSync(join(tmpdir(), "weights-"));
    // A learning rate too small to move the weights in an epoch: each seed scores about what the
    // kept seed it starts from scored.
    const still = { ...request, runId: "later-run", trialId: "continued", seeds: 2, keepWeights: false, recipe: { epochs: 1, batchSize: 64, lr: 1e-7 } };
    const continued = await evaluateToResult(client, { ...still, initWeights: { runId: RUN, trialId: "best" } });
    const kept = result.seedResults.map((s) => s.metrics.val_accuracy!);
    const got = continued.seedResults.map((s) => s.metrics.val_accuracy!);
    expect(Math.min(...kept)).toBeGreaterThan(0.5);
    got.forEach((acc, i) => expect(Math.abs(acc - kept[i]!), `seed ${i}`).toBeLessThanOrEqual(0.05));
    // Three seeds from two kept would make two of them one seed's continuation: refused.
    const more = await evaluateToResult(client, { ...still, trialId: "more", seeds: 3, initWeights: { runId: RUN, trialId: "best" } }).catch((e: unknown) => e);
    expect(ResearchError.from(more).label).toBe("invalid_config");
    expect(String((more as Error).message)).toMatch(/has 2 seeds' weights kept, fewer than the 3 seeds asked/);
    // The same request from the model's own initialisation learns nothing at that rate.
    const fresh = await evaluateToResult(client, { ...still, trialId: "fresh", seeds: 1 });
    expect(fresh.seedResults[0]!.metrics.val_accuracy!).toBeLessThan(0.4);

    const refused = await evaluateToResult(client, { ...still, trialId: "nothing", initWeights: { runId: RUN, trialId: "never-kept" } }).catch((e: unknown) => e);
    expect(ResearchError.from(refused).label).toBe("invalid_config");
    expect(String((refused as Error).message)).toMatch(/no weights kept for trial never-kept of run .* to start from/);
    expect(() => planEvaluation(create(EvaluateRequestSchema, { ...still, weightsOf: "best", initWeights: { runId: RUN, trialId: "best" } }), [])).toThrow(/init_weights and weights_of exclude each other/);
  });

  it("says in the report why the weights are not there, and never waits past its bound", async () => {
    const reportOf = async (trialId: string, runners: RunnerClient[], startedAtMs?: number) => {
      const dir = mkdtempSync(join(tmpdir(), "weights-run-"));
      const { state: ended, finished } = finishedRun(trialId, startedAtMs);
      const t0 = Date.now();
      await writeArtifacts(dir, ended, finished, { runners, log });
      const ms = Date.now() - t0;
      const json = JSON.parse(readFileSync(join(dir, "report.json"), "utf8")) as { outcome: { best_trial: { weights: { files: unknown[]; failure: { label: string; message: string } } } } };
      const markdown = readFileSync(join(dir, "report.md"), "utf8");
      const pts = readdirSync(join(dir, "src/models")).filter((f) => f.endsWith(".pt") || f.endsWith(".part"));
      rmSync(dir, { recursive: true, force: true });
      return { ms, markdown, pts, ...json.outcome.best_trial.weights };
    };
    root = mkdtempSync(join(tmpdir(), "weights-"));

    const notKept = await reportOf("never-kept", [client]);
    expect(notKept).toMatchObject({ files: [], pts: [], failure: { label: "invalid_config" } });
    expect(notKept.failure.message).toMatch(/no weights kept for trial never-kept/);
    expect(notKept.markdown).toMatch(/- Trained weights: not in the run folder \(invalid_config: no weights kept for trial never-kept/);

    const gone = connectRunner(await closedAddress());
    const unreachable = await reportOf("best", [gone]);
    gone.close();
    expect(unreachable).toMatchObject({ files: [], pts: [], failure: { label: "runner_unavailable" } });
    expect(unreachable.markdown).toMatch(/- Trained weights: not in the run folder \(runner_unavailable: /);

    // A runner that takes the connection and never answers, at the end of a run's clock: the fetch gets its minimum, 2 s.
    const silent = await new Promise<Server>((resolve) => {
      const server = createServer(() => undefined).listen(0, "127.0.0.1", () => resolve(server));
    });
    const mute = connectRunner(`127.0.0.1:${(silent.address() as { port: number }).port}`);
    const late = await reportOf("best", [mute], Date.now() - 600_000);
    mute.close();
    silent.close();
    expect(late).toMatchObject({ files: [], pts: [], failure: { label: "runner_unavailable" } });
    expect(late.ms).toBeGreaterThanOrEqual(1_900);
    expect(late.ms).toBeLessThan(5_000);
    console.log(`no weights: not kept ${notKept.ms} ms, runner gone ${unreachable.ms} ms, silent runner ${late.ms} ms`);
  });
});
