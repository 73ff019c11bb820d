/**
 * The runner end to end: real gRPC, real bubblewrap sandbox, real torch.
 * One runner (2 slots) serves every case in order, so each hostile case also
 * proves the service still answers the next request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readdirSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { create, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { DEFAULT_PYTHON, SYSTEM_PYTHON } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { pino } from "pino";
import { ResearchError } from "../../core/failure.js";
import { connectRunner, endedByRunner, evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import {
  ArgumentKind,
  DatasetInfoSchema,
  EvalResultSchema,
  GoalStatus,
  Metric,
  ScriptLanguage,
  Task,
  type EvaluateEvent,
  type EvaluateRequestSchema,
  type Optimizer,
  WeightsRefSchema,
} from "../../proto/gen/research/v1/runner_pb.js";
import { startProblem, type Start } from "../../cli/starting-point.js";
import { DIGITS_CNN, hostile } from "../helpers/models.js";
import { watchedEvaluation } from "../../agents/analyst/evaluation.js";
import { Decision, GoalSchema, StartingPointSchema, TrialJudgedSchema, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { labelName } from "../../core/failure.js";
import type { EventInit } from "../../bus/index.js";
import { evaluated, RUN, started, state } from "../agents/helpers.js";
import { confirmOnTest } from "../../agents/judge/confirm.js";
import { datasetFixtures } from "../helpers/fixtures.js";
import { ACCURACY } from "../../core/objective.js";
import { modelSpec } from "../../core/config-wire.js";

type Req = MessageInitShape<typeof EvaluateRequestSchema>;
let runner: RunningRunner;
let client: RunnerClient;
let fixtures: string;
/** The runner's workers in the order they started ("train/slot-0", "quick/slot-0", ...), from its log. */
const workersStarted: string[] = [];
const SECRET = "runner-secret-7f3a9c";

function digits(code: string, className: string, extra: Partial<Req> = {}): Req {
  return {
    trialId: `t-${className}`,
    model: { code, className },
    dataset: { name: "digits", subset: 600 },
    recipe: { epochs: 1, batchSize: 64 },
    seeds: 1,
    budget: { timeBudgetS: 60 },
    ...extra,
  } as Req;
}

/** A request to train an MLP regressor on diabetes (10 features, one number) whose layers are `sequential`'s arguments. */
function diabetes(sequential: string, extra: Partial<Req> = {}): Req {
  const code = `
import torch.nn as nn

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(${sequential})

    def forward(self, x):
        return self.net(x)
`;
  return {
    trialId: "t-regressor",
    model: { code, className: "Regressor" },
    dataset: { name: "diabetes", task: Task.REGRESSION },
    metric: Metric.RMSE,
    seeds: 3,
    recipe: { epochs: 8, batchSize: 32, lr: 0.01 },
    budget: { timeBudgetS: 60 },
    ...extra,
  } as Req;
}

async function failureOf(req: Req): Promise<ResearchError> {
  const err = await evaluateToResult(client, req).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ResearchError);
  return err as ResearchError;
}

beforeAll(async () => {
  fixtures = datasetFixtures();
  process.env.RUNNER_TEST_SECRET = SECRET;
  const logger = pino({ level: "info" }, {
    write: (line: string) => {
      const entry = JSON.parse(line) as { msg?: string; worker?: string };
      if (entry.msg === "worker started") workersStarted.push(entry.worker!);
    },
  });
  runner = await startRunner({ slots: 2, dataRoots: [fixtures], logger });
  client = connectRunner(runner.address);
});

afterAll(async () => {
  client?.close();
  await runner?.close();
});

describe("runner service", () => {
  it("reports health with device, slots and sandbox", async () => {
    const h = await client.health({});
    expect(h.slots).toBe(2);
    // Slot 0's worker is up as the runner serves; slot 1's starts behind it without a job, so a
    // run's second trial finds it warm. The summaries' own worker starts only when one comes
    // with every slot busy.
    expect(h.freeSlots).toBe(2);
    let ready = h.workersReady;
    for (let i = 0; i < 300 && ready < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ready = (await client.health({})).workersReady;
    }
    expect(ready).toBe(2);
    expect(workersStarted.sort()).toEqual(["referee/slot-0", "train/slot-0", "train/slot-1"]);
    expect(h.device?.kind).toBe("cpu");
    expect(h.device?.sandboxed).toBe(true);
    expect(h.device?.gpus).toBe(0);
    expect(h.device?.gpuMemoryMb).toBe(0n);
    // The project's venv (torch 2.x) when set up; Debian's torch 1.13 is tested in sandbox-prefix.test.ts.
    expect(h.device?.torchVersion).toMatch(DEFAULT_PYTHON === SYSTEM_PYTHON ? /^1\.13/ : /^2\./);
  });

  it("evaluates a good CNN on digits over 3 seeds with a CI and goal status", async () => {
    const events: string[] = [];
    const result = await evaluateToResult(
      client,
      digits(DIGITS_CNN, "DigitsNet", { seeds: 3, recipe: { epochs: 4, batchSize: 32, lr: 0.003 }, target: 0.8, dataset: { name: "digits" } }),
      (e) => events.push(e.event.case ?? ""),
    );
    const acc = result.aggregated.val_accuracy!;
    expect(acc.n).toBe(3);
    expect(acc.mean).toBeGreaterThan(0.85);
    expect(acc.ci95[0]!).toBeLessThanOrEqual(acc.mean);
    expect(acc.ci95[1]!).toBeGreaterThanOrEqual(acc.mean);
    expect(acc.min).toBeLessThanOrEqual(acc.max);
    expect([GoalStatus.ACHIEVED, GoalStatus.LIKELY]).toContain(result.goalStatus);
    expect(result.seedResults.map((s) => s.seed).sort()).toEqual([0, 1, 2]);
    expect(result.seedResults[0]!.learningCurve?.valAccuracy).toHaveLength(4);
    expect(result.seedResults[0]!.confusionMatrix).toHaveLength(10);
    expect(result.params).toBeGreaterThan(0n);
    expect(events[0]).toBe("started");
    expect(events.filter((e) => e === "progress")).toHaveLength(12);
    expect(events.filter((e) => e === "seedFinished")).toHaveLength(3);

    // The result keeps the seed documents' JSON names.
    const json = toJson(EvalResultSchema, result, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, any>;
    expect(Object.keys(json.aggregated.val_accuracy)).toEqual(expect.arrayContaining(["mean", "std", "ci_95", "min", "max"]));
    expect(json.seed_results).toHaveLength(3);
    expect(json.num_seeds).toBe(3);
    expect(typeof json.best_seed).toBe("number");
    expect(json.aggregated.val_f1_macro.mean).toBeGreaterThan(0.8);
  });

  it("trains once for a request and its duplicates (one idempotency key): a duplicate's caller leaving cancels nothing", async () => {
    const req = digits(DIGITS_CNN, "DigitsNet", { runId: "r-once", trialId: "t-once", seeds: 1, recipe: { epochs: 3, batchSize: 32 }, idempotencyKey: "r-once/t-once" });
    const gone = new AbortController();
    const leaving = evaluateToResult(client, req, () => gone.abort(), { signal: gone.signal }).catch((err: unknown) => err);
    const [first, second] = await Promise.all([evaluateToResult(client, req), evaluateToResult(client, req)]);
    // The caller that went away broke its call: the runner may train on, and did.
    const left = (await leaving) as ResearchError;
    expect(left).toBeInstanceOf(ResearchError);
    expect(endedByRunner(left)).toBe(false);
    // One training: the same seconds to the millisecond, the same curve.
    expect(second.seedResults[0]!.seconds).toBe(first.seedResults[0]!.seconds);
    expect(second.seedResults[0]!.learningCurve).toEqual(first.seedResults[0]!.learningCurve);
    // A redelivery after the end gets the stored answer at once.
    const t0 = Date.now();
    const again = await evaluateToResult(client, req);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(again.seedResults[0]!.seconds).toBe(first.seedResults[0]!.seconds);
    // A caller's own error while it reads the events stays its own: not the runner's unavailability.
    const own = new Error("the caller's own mistake");
    await expect(evaluateToResult(client, req, () => { throw own; })).rejects.toBe(own);
    expect((await client.health({})).freeSlots).toBe(2);
  });

  it("keeps a trial's weights and evaluates them on the test split without training again", async () => {
    const req = digits(DIGITS_CNN, "DigitsNet", { runId: "r-weights", trialId: "t-kept", seeds: 2, recipe: { epochs: 3, batchSize: 32, lr: 0.003 } });
    const trained = await evaluateToResult(client, { ...req, keepWeights: true });
    const events: string[] = [];
    const confirmed = await evaluateToResult(client, { ...req, trialId: "t-kept-test", weightsOf: "t-kept", evaluateTest: true, measureInference: true }, (e) => events.push(e.event.case ?? ""));
    // The same weights, seed by seed: the same validation score, and no epoch trained.
    const val = (r: typeof trained) => r.seedResults.map((s) => [s.seed, s.metrics.val_accuracy]).sort();
    expect(val(confirmed)).toEqual(val(trained));
    expect(confirmed.aggregated.test_accuracy!.mean).toBeGreaterThan(0.7);
    expect(confirmed.seedResults.every((s) => s.epochsCompleted === 0)).toBe(true);
    expect(events).not.toContain("progress");
    expect(trained.aggregated.test_accuracy).toBeUndefined();
    // Its inference timed where it ran, as asked; the training, not asked, has none.
    for (const s of confirmed.seedResults) {
      expect(s.inference?.batch1?.batch).toBe(1);
      expect(s.inference!.batch1!.medianMs).toBeGreaterThan(0);
      expect(s.inference!.batchEval!.p90Ms).toBeGreaterThanOrEqual(s.inference!.batchEval!.medianMs);
      expect(s.inference!.flopsPerSample).toBeGreaterThan(0n);
      // Trained on the CPU: no allocator peak, no second timing on the host's CPU.
      expect(s.inference!.batchEval!.peakMemoryMb).toBeUndefined();
      expect(s.inference!.hostCpuBatch1).toBeUndefined();
    }
    expect(trained.seedResults.every((s) => s.inference === undefined)).toBe(true);

    const gone = await failureOf({ ...req, trialId: "t-other-test", weightsOf: "t-never-kept", evaluateTest: true });
    expect(gone.label).toBe("invalid_config");
    expect(gone.message).toMatch(/no weights kept for trial t-never-kept seed 0, 1/);
  });

  it("evaluates a regression on diabetes: RMSE in the target's units, lower is better, an interval that counts the validation set", async () => {
    const req = (extra: Partial<Req>): Req => diabetes("nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)", extra);
    const events: EvaluateEvent[] = [];
    const result = await evaluateToResult(client, req({ target: 70, evaluateTest: true }), (e) => events.push(e));
    const rmse = result.aggregated.val_rmse!;
    // Predicting the mean scores the target's spread, about 77; the interval is wider than the seeds' spread alone.
    expect(rmse.n).toBe(3);
    expect(rmse.mean).toBeGreaterThan(40);
    expect(rmse.mean).toBeLessThan(65);
    expect(rmse.ci95[1]! - rmse.ci95[0]!).toBeGreaterThan((2 * 4.30 * rmse.std) / Math.sqrt(3));
    expect(result.aggregated.val_r2!.mean).toBeGreaterThan(0.25);
    expect(result.aggregated.val_rmse_se).toBeUndefined();
    // Met on the interval's upper end: lower is better.
    expect(result.goalStatus).toBe(rmse.ci95[1]! <= 70 ? GoalStatus.ACHIEVED : GoalStatus.LIKELY);
    const best = result.seedResults.find((s) => s.seed === result.bestSeed)!;
    expect(Math.min(...result.seedResults.map((s) => s.metrics.val_rmse!))).toBe(best.metrics.val_rmse);
    expect(result.numClasses).toBe(0);
    expect(result.aggregated.val_accuracy).toBeUndefined();
    expect(result.aggregated.ensemble_test_rmse!.mean).toBeGreaterThan(30);
    const progress = events.flatMap((e) => (e.event.case === "progress" ? [e.event.value] : []));
    expect(progress).toHaveLength(24);
    expect(progress.every((p) => p.valMetric > 0 && p.valAccuracy === 0)).toBe(true);
    expect(result.seedResults[0]!.learningCurve?.valMetric).toHaveLength(8);
    const finished = events.flatMap((e) => (e.event.case === "seedFinished" ? [e.event.value] : []));
    expect(finished.map((f) => f.valMetric).sort()).toEqual(result.seedResults.map((s) => s.metrics.val_rmse).sort());

    // A metric that does not fit the dataset's task is refused before anything trains.
    const mismatch = await failureOf(req({ metric: Metric.ACCURACY }));
    expect(mismatch.label).toBe("invalid_config");
    expect(mismatch.message).toMatch(/metric accuracy is for classification, and dataset diabetes is asked for regression/);
    const notRegression = await failureOf(req({ dataset: { name: "digits", task: Task.REGRESSION } }));
    expect(notRegression.message).toMatch(/digits is a classification dataset, not regression/);
  });

  it("ends each seed at its best validation epoch: its score, and its weights kept for the test split", async () => {
    // A wide net at a high rate overfits diabetes's 300-odd training rows within a few epochs.
    const req = diabetes("nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)", {
      runId: "r-best-epoch",
      trialId: "t-overfits",
      seeds: 2,
      recipe: { epochs: 30, batchSize: 16, lr: 0.01 },
    });
    const trained = await evaluateToResult(client, { ...req, keepWeights: true });
    for (const s of trained.seedResults) {
      const curve = s.learningCurve!.valMetric;
      expect(curve).toHaveLength(30);
      expect(s.keptEpoch).toBe(curve.lastIndexOf(Math.min(...curve)) + 1);
      expect(s.metrics.val_rmse).toBeCloseTo(curve[s.keptEpoch - 1]!, 9);
      // Its last validation pass is timed (what the run's reserve for the confirmation is sized by): a part of the seed's time.
      expect(s.evalSeconds).toBeGreaterThan(0);
      expect(s.evalSeconds).toBeLessThan(s.seconds / 30);
    }
    expect(trained.seedResults.some((s) => s.keptEpoch < s.epochsCompleted)).toBe(true);
    const confirmed = await evaluateToResult(client, { ...req, trialId: "t-overfits-test", weightsOf: "t-overfits", evaluateTest: true });
    const val = (r: typeof trained) => r.seedResults.map((s) => [s.seed, s.metrics.val_rmse!.toFixed(6)]).sort();
    expect(val(confirmed)).toEqual(val(trained));
  });

  it("summarizes a model: params, layers with output shapes, FLOPs", async () => {
    const s = await client.summarize({ model: { code: DIGITS_CNN, className: "DigitsNet" }, inputShape: [1, 8, 8], numClasses: 10 });
    expect(s.failure).toBeUndefined();
    expect(s.totalParams).toBe(BigInt(160 + 32 + 4640 + 64 + 5130));
    expect(s.outputShape.map(Number)).toEqual([1, 10]);
    expect(s.layers.length).toBeGreaterThan(5);
    expect(s.flops).toBeGreaterThan(0n);
  });

  it("a summary takes a free training slot; with every slot training, the summaries' own worker starts and it waits for neither", async () => {
    const quickStarts = () => workersStarted.filter((w) => w.startsWith("quick/")).length;
    const summary = () => client.summarize({ model: { code: DIGITS_CNN, className: "DigitsNet" }, inputShape: [1, 8, 8], numClasses: 10 });
    // The summary above found a slot free.
    expect(quickStarts()).toBe(0);
    expect((await summary()).failure).toBeUndefined();
    expect(quickStarts()).toBe(0);
    const abort = new AbortController();
    const begun: Promise<void>[] = [];
    // Two trainings that never end hold both slots, their streams read to the end in the background.
    const busy = [0, 1].map((i) => {
      let begin!: () => void;
      begun.push(new Promise<void>((r) => (begin = r)));
      const stream = client.evaluate(digits(hostile("while True:\n    pass"), "Net", { trialId: `t-busy-${i}`, budget: { timeBudgetS: 120 } }), { signal: abort.signal });
      return (async () => {
        for await (const e of stream) if (e.event.case === "started") begin();
      })().catch(() => {});
    });
    try {
      await Promise.all(begun);
      for (let i = 0; i < 100 && (await client.health({})).freeSlots > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await client.health({})).freeSlots).toBe(0);
      const t0 = Date.now();
      const s = await summary();
      expect(s.failure).toBeUndefined();
      expect(s.totalParams).toBe(BigInt(160 + 32 + 4640 + 64 + 5130));
      // A fork server's start and the summary, not the trainings' 120 s.
      expect(Date.now() - t0).toBeLessThan(30_000);
      expect(quickStarts()).toBe(1);
      expect((await client.health({})).freeSlots, "both trainings still hold their slots").toBe(0);
    } finally {
      abort.abort();
      await Promise.all(busy);
    }
    for (let i = 0; i < 100 && (await client.health({})).freeSlots < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await client.health({})).freeSlots).toBe(2);
  });

  it("describes a dataset", async () => {
    const d = await client.describe({ dataset: { name: "digits" } });
    expect(d.inputShape).toEqual([1, 8, 8]);
    expect(d.numClasses).toBe(10);
    expect(d.nTrain + d.nVal + d.nTest).toBe(1797);
  });
});

describe("a starting point in Python, built by the runner before a run spends anything (launch --from model.py)", () => {
  const NET = (init: string, out = "num_classes") => `import torch.nn as nn

class Net(nn.Module):
    def __init__(self, ${init}):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, width), nn.ReLU(), nn.Dropout(dropout))
        self.head = nn.Linear(width, ${out})

    def forward(self, x):
        return self.head(self.body(x))
`;
  const GOOD = NET("num_classes=10, width=16, dropout=0.1, bn=False");
  const digits = create(DatasetInfoSchema, { name: "digits", inputShape: [1, 8, 8], numClasses: 10, inputDtype: "float32" });
  const problemOf = (code: string, maxParams = 0, className = "Net") => {
    const model = { name: className, class_name: className, init_kwargs: {} };
    const start: Start = { point: create(StartingPointSchema, { origin: "net.py", model: modelSpec(model), modelCode: code }), model, train: {} };
    return { start, problem: startProblem(start, create(GoalSchema, { dataset: "digits", maxParams: BigInt(maxParams) }), digits, client) };
  };

  it("records its size and the constructor's numeric and boolean arguments", async () => {
    const { start, problem } = problemOf(GOOD);
    expect(await problem).toBeUndefined();
    expect(Number(start.point.params)).toBe(64 * 16 + 16 + 16 * 10 + 10);
    expect(start.point.arguments.map((a) => [a.name, a.kind, a.defaultValue])).toEqual([
      ["num_classes", ArgumentKind.INT, 10],
      ["width", ArgumentKind.INT, 16],
      ["dropout", ArgumentKind.FLOAT, 0.1],
      ["bn", ArgumentKind.BOOL, 0],
    ]);
  });

  it("names each bad one in one line: an import that fails, a class that needs arguments, an output that misses the classes, too many parameters", async () => {
    const cases: [ReturnType<typeof problemOf>, RegExp][] = [
      [problemOf(`import not_a_package\n${GOOD}`), /^--from net\.py: does not build for digits: .*ModuleNotFoundError: No module named 'not_a_package'/],
      [problemOf(NET("num_classes=10, *, width, dropout=0.1")), /^--from net\.py: does not build for digits: instantiating Net: TypeError: .*missing 1 required keyword-only argument: 'width'$/],
      [problemOf(NET("num_classes=10, width=16, dropout=0.1", "7")), /^--from net\.py: does not build for digits: .*forward returned shape \[1, 7\], expected \[1, 10\] \(batch, num_classes\)$/],
      [problemOf(GOOD, 500), /^--from net\.py: 1,210 parameters exceed the goal's limit of 500$/],
      [problemOf(GOOD, 0, "Missing"), /^--from net\.py: does not build for digits: the source defines no nn\.Module subclass named 'Missing' \(nn\.Module subclasses found: Net\)$/],
    ];
    for (const [c, expected] of cases) expect(await c.problem).toMatch(expected);
    // A model_config is compiled here, no runner needed, and held to the same limit.
    const mlp = { name: "mlp", layers: [{ type: "flatten" as const }, { type: "linear" as const, out_features: 512 }] };
    const yaml: Start = { point: create(StartingPointSchema, { origin: "big.yaml", model: modelSpec(mlp) }), model: mlp, train: {} };
    expect(await startProblem(yaml, create(GoalSchema, { dataset: "digits", maxParams: 5000n }), digits, client)).toBe("--from big.yaml: 38,410 parameters exceed the goal's limit of 5,000");
  });
});

describe("datasets from local files in their real formats", () => {
  const cases: [string, Record<string, unknown>, number[], number][] = [
    ["mnist", { dataDir: "mnist" }, [1, 28, 28], 10],
    ["cifar10", { dataDir: "cifar10" }, [3, 32, 32], 10],
    ["cifar100", { dataDir: "cifar100" }, [3, 32, 32], 100],
    ["svhn", { dataDir: "svhn" }, [3, 32, 32], 10],
    ["csv", { dataDir: "tabular.csv", targetColumn: "bought" }, [], 2],
    ["text", { dataDir: "text" }, [128], 2],
    ["synthetic", { shape: [20], numClasses: 3, difficulty: 0.3 }, [20], 3],
    ["iris", {}, [4], 3],
    ["wine", {}, [13], 3],
    ["breast_cancer", {}, [30], 2],
  ];
  for (const [name, extra, shape, classes] of cases) {
    it(`describes ${name}`, async () => {
      const dataset = { name, ...extra, dataDir: extra.dataDir ? `${fixtures}/${extra.dataDir as string}` : "" };
      const d = await client.describe({ dataset });
      expect(d.failure?.message).toBeUndefined();
      if (shape.length) expect(d.inputShape).toEqual(shape);
      expect(d.numClasses).toBe(classes);
      expect(d.nTrain).toBeGreaterThan(0);
      expect(d.nVal).toBeGreaterThan(0);
    });
  }

  it("trains on CIFAR-format data and on a CSV table", async () => {
    const cnn = `
import torch.nn as nn
class C(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10))
    def forward(self, x):
        return self.net(x)
`;
    const cifar = await evaluateToResult(client, digits(cnn, "C", { dataset: { name: "cifar10", dataDir: `${fixtures}/cifar10` }, recipe: { epochs: 15, lr: 0.005, batchSize: 32 } }));
    // Chance is 0.1; the fixture images carry a class-dependent patch.
    expect(cifar.aggregated.val_accuracy!.mean).toBeGreaterThan(0.3);
    const info = await client.describe({ dataset: { name: "csv", dataDir: `${fixtures}/tabular.csv`, targetColumn: "bought" } });
    const mlp = `
import torch.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(${info.inputShape[0]}, 32), nn.ReLU(), nn.Linear(32, 2))
    def forward(self, x):
        return self.net(x)
`;
    const table = await evaluateToResult(
      client,
      digits(mlp, "M", { dataset: { name: "csv", dataDir: `${fixtures}/tabular.csv`, targetColumn: "bought" }, recipe: { epochs: 5 } }),
    );
    expect(table.aggregated.val_accuracy!.mean).toBeGreaterThan(0.5);
  });
});

describe("hostile and broken model code", () => {
  const cases: [string, string, string, Partial<Req>?][] = [
    ["syntax error", "class Net(nn.Module:\n  pass", "codegen_error"],
    ["shape mismatch", hostile("", "return self.fc(x.flatten(1)[:, :10])"), "shape_error"],
    ["NaN loss", hostile("", "return self.fc(x.flatten(1)) * float('nan')"), "nan_loss"],
    ["network connect", hostile("socket.create_connection(('1.1.1.1', 80), timeout=3)"), "sandbox_violation"],
    ["write outside scratch", hostile("open('/usr/lib/pwned-by-model', 'w').write('x')"), "sandbox_violation"],
    [
      "network connect, the error disguised",
      hostile("try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3)\nexcept OSError:\n    raise ValueError('width must be even')"),
      "sandbox_violation",
    ],
    ["infinite loop", hostile("while True:\n    pass"), "budget_overrun", { budget: { timeBudgetS: 4 } }],
    ["memory bomb", hostile("self.blob = bytearray(16 * 1024 ** 3)"), "oom", { budget: { memoryLimitMb: 2048 } }],
    ["segfault via ctypes", hostile("ctypes.string_at(0)"), "crash"],
  ];
  for (const [name, code, label, extra] of cases) {
    it(`${name} -> ${label}, and the service keeps serving`, async () => {
      const f = await failureOf(digits(code, "Net", extra));
      expect(f.label, f.message).toBe(label);
      expect(f.message.length).toBeGreaterThan(0);
      // The runner's own answer: its evaluation has ended (a caller may move the trial elsewhere).
      expect(endedByRunner(f)).toBe(true);
      expect((await client.health({})).workersReady).toBeGreaterThanOrEqual(1);
    });
  }

  it("a fork bomb that swallows the refusal is labelled a breach, not scored", async () => {
    const bomb = "for _ in range(10000):\n    try:\n        os.fork()\n    except OSError:\n        pass";
    const f = await failureOf(digits(hostile(bomb), "Net", { budget: { timeBudgetS: 20 } }));
    expect(f.label).toBe("sandbox_violation");
    expect(f.message).toContain("starting a process (os.fork)");
  });

  it("cannot forge its score: rewriting the trainer and writing its own result earn what its predictions earn", async () => {
    // Predicts each validation example's label from whatever labels its process holds, claims a
    // perfect score, and sends its own result before the trainer's. It holds no validation label.
    const forge = `
import gc, sys
metrics, trainer = sys.modules["metrics"], sys.modules["trainer"]
def forged(model, data, x_all, idx, *args, **kwargs):
    guess = data.y_train[idx].clamp(min=0)
    logprobs = torch.full((len(idx), 10), -30.0)
    logprobs[torch.arange(len(idx)), guess] = 0.0
    predictions = metrics.encode(logprobs.numpy())
    for o in gc.get_objects():
        if type(o).__name__ == "_Emitter":
            o({"kind": "result", "seed": 0, "metrics": {"val_accuracy": 1.0, "val_loss": 0.0}, "val_predictions": predictions,
               "learning_curve": {}, "params": 1, "num_classes": 10, "class_names": [str(i) for i in range(10)]})
    return predictions
trainer._predict = forged
metrics.score = metrics.summary = lambda *args, **kwargs: {"val_accuracy": 1.0}`;
    const result = await evaluateToResult(client, digits(hostile(forge, "return self.fc(x.flatten(1)) * 0"), "Net", { recipe: { epochs: 2 } }));
    expect(result.aggregated.val_accuracy!.mean).toBeLessThan(0.3); // one class of ten
  });

  it("sees the published inputs and no file or package that holds a held-out label", async () => {
    const hunt = `
import glob, sys
found = [p for pattern in ("/data/**", "/usr/share/datasets/**", "${"${FIXTURES}"}/**", "/usr/lib/python3*/**/sklearn/datasets/data/*", "/scratch/**")
         for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)]
try:
    sys.modules["datasets"].load({"name": "digits", "data_dir": ""})
    found.append("LOADED DIGITS")
except Exception as e:
    found.append(type(e).__name__)
raise RuntimeError("FOUND " + " ".join(found))`;
    const f = await failureOf(digits(hostile(hunt.replace("${FIXTURES}", fixtures)), "Net"));
    const seen = f.message + f.detail;
    expect(seen).toMatch(/\/data\/d-[0-9a-f]{16}\/x_train\.npy/);
    expect(seen).toMatch(/\/data\/s-[0-9a-f]{16}\.npz/);
    expect(seen).toContain("/scratch/labels-in/"); // its own split's training labels, and nothing else
    expect(seen).not.toMatch(/digits\.csv|LOADED|fixtures|\/y-[0-9a-f]/);
    expect(seen).toContain("TaskFailure"); // scikit-learn's copy of digits is hidden too
  });

  it("cannot read the runner's environment secrets", async () => {
    const probe = `
found = []
for k, v in os.environ.items():
    found.append(k + "=" + v)
for p in os.listdir('/proc'):
    try:
        found.append(open('/proc/%s/environ' % p).read())
    except Exception as e:
        found.append(repr(e))
raise RuntimeError("SEEN " + " | ".join(found))`;
    const f = await failureOf(digits(hostile(probe), "Net"));
    expect(f.message + f.detail).toContain("SEEN");
    expect(f.message + f.detail).not.toContain(SECRET);
  });

  it("leaves nothing behind on the host", () => {
    expect(existsSync("/usr/lib/pwned-by-model")).toBe(false);
  });

  it("serves a good request after all of that", async () => {
    const r = await evaluateToResult(client, digits(DIGITS_CNN, "DigitsNet", { recipe: { epochs: 2, batchSize: 32 } }));
    expect(r.aggregated.val_accuracy!.mean).toBeGreaterThan(0.5);
  });
});

describe("scripts (RunScript)", () => {
  it("runs python with the files sent in and returns the files it wrote", async () => {
    const r = await client.runScript({
      language: ScriptLanguage.PYTHON,
      source: "import os\nprint('read', open('data/in.txt').read())\nos.makedirs('out')\nopen('out/result.txt', 'w').write('done')",
      files: { "data/in.txt": "42" },
    });
    expect(r.failure).toBeUndefined();
    expect(r.exitCode).toBe(0);
    expect(r.timedOut).toBe(false);
    expect(r.stdout).toContain("read 42");
    // Unchanged inputs do not come back.
    expect(r.files).toEqual({ "out/result.txt": "done" });
  });

  it("runs bash with stderr in the output, its exit status, and no root", async () => {
    const r = await client.runScript({ language: ScriptLanguage.BASH, source: "ls -R; id -u >&2; exit 3", files: { "a.txt": "x", "sub/b.txt": "y" } });
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(/a\.txt/);
    expect(r.stdout).toMatch(/b\.txt/);
    const uid = r.stdout.trim().split("\n").at(-1);
    expect(uid).toMatch(/^\d+$/);
    expect(uid).not.toBe("0");
  });

  it("stops a script at its timeout and keeps what it printed", async () => {
    const t0 = Date.now();
    const r = await client.runScript({ language: ScriptLanguage.PYTHON, source: "import time\nprint('started', flush=True)\ntime.sleep(60)", timeoutS: 1 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBe(137);
    expect(r.stdout).toContain("started");
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it("has no network: a connection attempt fails inside the script", async () => {
    const r = await client.runScript({ language: ScriptLanguage.PYTHON, source: "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)" });
    expect(r.failure).toBeUndefined();
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(/OSError|unreachable/i);
  });

  it("rejects bad script requests with INVALID_ARGUMENT", async () => {
    const bad: [Parameters<RunnerClient["runScript"]>[0], RegExp][] = [
      // A language from a newer proto than the runner's.
      [{ language: 7 as ScriptLanguage, source: "puts 1" }, /language 7 is not one of python, bash/],
      [{ language: ScriptLanguage.PYTHON, source: "  " }, /source is empty/],
      [{ language: ScriptLanguage.BASH, source: "true", timeoutS: 500 }, /timeout_s 500/],
      [{ language: ScriptLanguage.BASH, source: "true", files: { "../escape.txt": "x" } }, /"\.\.\/escape\.txt" is not a relative path/],
      [{ language: ScriptLanguage.BASH, source: "true", files: { "/etc/passwd": "x" } }, /is not a relative path/],
    ];
    for (const [req, message] of bad) {
      const err = await client.runScript(req).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ResearchError);
      expect(((err as ResearchError).cause as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err).toMatchObject({ label: "invalid_config", message: expect.stringMatching(message) });
    }
  });

  it("keeps serving after the scripts", async () => {
    const s = await client.summarize({ model: { code: DIGITS_CNN, className: "DigitsNet" }, inputShape: [1, 8, 8], numClasses: 10 });
    expect(s.failure).toBeUndefined();
    const r = await client.runScript({ language: ScriptLanguage.BASH, source: "echo ok" });
    expect(r.stdout.trim()).toBe("ok");
  });
});

describe("requests, cancellation and concurrency", () => {
  it("rejects invalid requests with INVALID_ARGUMENT and a precise message", async () => {
    const bad: [Req, RegExp][] = [
      [digits("", "Net"), /model.code is empty/],
      [digits(DIGITS_CNN, "1nope"), /not a Python identifier/],
      [digits(DIGITS_CNN, "DigitsNet", { dataset: { name: "imagenet" } }), /dataset.name "imagenet"/],
      [digits(DIGITS_CNN, "DigitsNet", { dataset: { name: "mnist", dataDir: "/etc" } }), /outside the runner's data roots/],
      // An optimizer from a newer proto than the runner's.
      [digits(DIGITS_CNN, "DigitsNet", { recipe: { optimizer: 9 as Optimizer } }), /recipe.optimizer 9 is not one of adam, adamw, sgd/],
      [digits(DIGITS_CNN, "DigitsNet", { seeds: 500 }), /seeds 500/],
    ];
    for (const [req, message] of bad) {
      const err = await failureOf(req);
      expect(err.label).toBe("invalid_config");
      expect(err.message).toMatch(message);
    }
  });

  it("a dataset that is not there is a labelled failure", async () => {
    const f = await failureOf(digits(DIGITS_CNN, "DigitsNet", { dataset: { name: "mnist", dataDir: `${fixtures}/does-not-exist` } }));
    expect(f.label).toBe("invalid_config");
    expect(f.message).toContain("does-not-exist");
  });

  it("cancelling a call kills its worker job and frees the slot", async () => {
    const abort = new AbortController();
    const stream = client.evaluate(digits(hostile("while True:\n    pass"), "Net", { budget: { timeBudgetS: 120 } }), { signal: abort.signal });
    const t0 = Date.now();
    await expect(
      (async () => {
        for await (const e of stream) if (e.event.case === "started") abort.abort();
      })(),
    ).rejects.toThrow();
    // The slot comes back well before the 120 s budget would have ended it.
    for (let i = 0; i < 100 && (await client.health({})).freeSlots < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await client.health({})).freeSlots).toBe(2);
    expect(Date.now() - t0).toBeLessThan(20_000);
  });

  it("a client deadline ends the call and the worker job", async () => {
    const err = await evaluateToResult(client, digits(hostile("while True:\n    pass"), "Net", { budget: { timeBudgetS: 120 } }), () => {}, {
      timeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResearchError);
    expect(err).toMatchObject({ label: "runner_unavailable", reason: "timeout" });
    expect(((err as ResearchError).cause as grpc.ServiceError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    for (let i = 0; i < 100 && (await client.health({})).freeSlots < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await client.health({})).freeSlots).toBe(2);
  });

  it("queues requests beyond the slots and completes them all", async () => {
    // Long enough (a few seconds each) that all four are in the runner at once.
    const reqs = [0, 1, 2, 3].map((i) => digits(DIGITS_CNN, "DigitsNet", { trialId: `q${i}`, recipe: { epochs: 25, batchSize: 32 } }));
    const running = reqs.map((r) => evaluateToResult(client, r));
    let h = await client.health({});
    for (let i = 0; i < 50 && h.queueDepth < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      h = await client.health({});
    }
    expect(h.freeSlots).toBe(0);
    expect(h.queueDepth).toBe(2);
    const results = await Promise.all(running);
    expect(results).toHaveLength(4);
    for (const r of results) expect(r.numSeeds).toBe(1);
    expect((await client.health({})).workersReady).toBe(2);
  });
});

describe("a time-boxed training with a deadline (a run's last long training)", () => {
  const boxed = (deadlineS: number, at?: { trialId: string; seedsAtOnce: boolean }) =>
    digits(DIGITS_CNN, "DigitsNet", { trialId: `boxed-${deadlineS}`, seeds: 3, recipe: { epochs: 10_000, batchSize: 32, trainSeconds: 2 }, budget: { timeBudgetS: 60, deadlineS }, ...at });

  it("trains each seed for its time, and a seed that starts late for what is left to the deadline", async () => {
    // Three seeds of 2 s on two slots: the third starts once one of the first two is done, so
    // with 3.5 s to the deadline it trains for less than its 2 s.
    const r = await evaluateToResult(client, boxed(3.5));
    const seconds = r.seedResults.map((s) => s.seconds).sort((a, b) => a - b);
    expect(seconds[0]).toBeLessThan(1.8);
    expect(seconds[2]).toBeGreaterThanOrEqual(2);
    // Not the trial's whole time: its scoring after the deadline goes at the machine's pace (6.2 s in
    // all for a 3.5-s deadline, beside two swarms on a slow CPU), and the late seed's own seconds
    // above are what the deadline bounds.
    // Without a deadline every seed trains its 2 s.
    const free = await evaluateToResult(client, boxed(0));
    for (const s of free.seedResults) expect(s.seconds).toBeGreaterThanOrEqual(2);
  });

  it("starts every seed at once when asked, the third on a spare worker: each trains its whole time by the deadline", async () => {
    // The first request starts the pool's spare; the second finds it warm, so its third seed
    // starts beside the other two, milliseconds after the first, and trains its 2 s less those
    // milliseconds, where in rounds it trained at most the 1.5 s left to the deadline.
    const atOnce = (id: string) => boxed(3.5, { trialId: id, seedsAtOnce: true });
    await evaluateToResult(client, atOnce("at-once-0"));
    const r = await evaluateToResult(client, atOnce("at-once-1"));
    for (const s of r.seedResults) expect(s.seconds).toBeGreaterThan(1.9);
    // The spare is no slot: a queued job never takes it.
    const h = await client.health({});
    expect([h.slots, h.workersReady]).toEqual([2, 2]);
  });
});

describe("the threads a seed's job trains with", () => {
  it("are an equal share of the cores for seeds started at once: a lone seed has them all, a seed on its slot the slot's", async () => {
    // The model says its threads in the one way a job's end tells: the message of its failure.
    const code = hostile("raise ValueError(f'threads {torch.get_num_threads()}')");
    const cores = availableParallelism();
    const { slots } = await client.health({});
    const lone = await failureOf(digits(code, "Net", { trialId: "threads-lone", seedsAtOnce: true }));
    expect(lone.message).toContain(`threads ${cores}`);
    const onSlot = await failureOf(digits(code, "Net", { trialId: "threads-slot" }));
    expect(onSlot.message).toContain(`threads ${Math.max(1, Math.floor(cores / slots))}`);
  });
});

describe("watched evaluations against the real runner", () => {
  it("stops a trial below its rung's median after one epoch, frees the slots and keeps its curve", async () => {
    // Four finished peers whose seed 0 was at 99% after epoch 1: a fresh digits CNN is not.
    const peer = (id: string): EventInit[] => [
      { runId: RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: id } } },
      { runId: RUN, trialId: id, body: { case: "trialEvaluated", value: { result: { seedResults: [{ seed: 0, learningCurve: { valAccuracy: [0.99, 0.99, 0.99, 0.99] } }] } } } },
      { runId: RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT } } },
    ];
    const s = state([started(), ...["a", "b", "c", "d"].flatMap(peer), { runId: RUN, trialId: "new", body: { case: "trialProposed", value: { hypothesis: "new" } } }]);
    const epochs: number[] = [];
    const started0 = Date.now();
    const out = await watchedEvaluation(
      client,
      digits(DIGITS_CNN, "DigitsNet", { trialId: "pruned", recipe: { epochs: 4, batchSize: 32 }, seeds: 2 }),
      { state: s, trial: s.trials.get("new")!, prune: true },
      (p) => epochs.push(p.epoch),
    );
    expect(out.stopped?.message).toMatch(/^after epoch 1\/4: seed 0 validation accuracy .* below the median 99\.00% of 4 finished trials at rung 0/);
    expect(out.stopped && labelName(out.stopped.label)).toBe("pruned");
    if (out.stopped === undefined) return;
    expect(out.partial.seedResults.find((r) => r.seed === 0)?.learningCurve?.valAccuracy).toHaveLength(1);
    expect(Date.now() - started0).toBeLessThan(60_000);
    for (let i = 0; i < 100 && (await client.health({})).freeSlots < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await client.health({})).freeSlots).toBe(2);
  });

  it("cancels a trial when its run decides to stop", async () => {
    const s = state([started(), { runId: RUN, trialId: "new", body: { case: "trialProposed", value: { hypothesis: "new" } } }]);
    const out = await watchedEvaluation(
      client,
      digits(DIGITS_CNN, "DigitsNet", { trialId: "stopped", recipe: { epochs: 500, batchSize: 32 }, seeds: 1 }),
      { state: s, trial: s.trials.get("new")!, prune: false },
      // After the first epoch the follower applies the judge's stop decision for another trial.
      () => void s.trials.set("other", { id: "other", objective: ACCURACY, judged: create(TrialJudgedSchema, { decision: Decision.GOAL_ACHIEVED, runReason: "goal met: 95% CI lower bound 91.19% >= target 90.00%" }) }),
    );
    // Not a fault of the trial, nor an overrun: the run is over, and the label and message say why.
    expect(out.stopped && labelName(out.stopped.label)).toBe("cancelled");
    expect(out.stopped?.message).toBe("the run ended while this trial was training (goal met: 95% CI lower bound 91.19% >= target 90.00%)");
  });

  it("cancels a trial when its run's time reaches the reserve for the confirmation", async () => {
    // The run started at 1 s past the epoch with a 60 s budget: long spent.
    const s = state([started({}, { timeBudgetS: 60 }), { runId: RUN, trialId: "late", body: { case: "trialProposed", value: { hypothesis: "late" } } }]);
    const t0 = Date.now();
    const out = await watchedEvaluation(
      client,
      digits(DIGITS_CNN, "DigitsNet", { trialId: "late", recipe: { epochs: 500, batchSize: 32 }, seeds: 1 }),
      { state: s, trial: s.trials.get("late")!, prune: false },
      () => {},
    );
    expect(out.stopped && labelName(out.stopped.label)).toBe("budget_overrun");
    expect(out.stopped?.message).toMatch(/reached its reserve for the test confirmation/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

describe("a last long training past the reserve", () => {
  // A 120 s run 80 s in, whose best so far trained 400 s a seed: 40 s left, past the reserve (the
  // report's 15 s and that best's confirmation, 30 s) but 25 s from the report's time alone, so a
  // loaded machine's slow start and scoring stay inside the window (5 s wide, it failed in CI).
  const pastReserve = (id: string) => {
    const s = state([
      started({}, { timeBudgetS: 120 }),
      { runId: RUN, trialId: "best", body: { case: "trialProposed", value: { hypothesis: "best" } } },
      evaluated("best", 0.9, 0.01, { seedSeconds: [400] }),
      { runId: RUN, trialId: "best", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT } } },
      { runId: RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: id } } },
    ]);
    s.startedAtMs = Date.now() - 80_000;
    return s;
  };

  it("finishes: the runner ends it by its deadline, and a probe there is cancelled", async () => {
    const s = pastReserve("last");
    const boxed = digits(DIGITS_CNN, "DigitsNet", { trialId: "last", seeds: 2, recipe: { epochs: 10_000, batchSize: 32, trainSeconds: 2 }, budget: { timeBudgetS: 120, deadlineS: 4 } });
    const out = await watchedEvaluation(client, boxed, { state: s, trial: s.trials.get("last")!, prune: false }, () => {});
    if (out.stopped) expect.fail(`cancelled at the reserve: ${out.stopped.message}`);
    expect(out.result.seedResults).toHaveLength(2);

    const p = pastReserve("probe");
    const probe = await watchedEvaluation(client, digits(DIGITS_CNN, "DigitsNet", { trialId: "probe", recipe: { epochs: 500, batchSize: 32 }, seeds: 1 }), { state: p, trial: p.trials.get("probe")!, prune: false }, () => {});
    expect(probe.stopped?.message).toMatch(/reached its reserve for the test confirmation/);
  });

  it("is cancelled once only the report's time is left", async () => {
    const s = pastReserve("late");
    s.startedAtMs = Date.now() - 110_000;
    const t0 = Date.now();
    const boxed = digits(DIGITS_CNN, "DigitsNet", { trialId: "late", seeds: 1, recipe: { epochs: 10_000, batchSize: 32, trainSeconds: 60 }, budget: { timeBudgetS: 120, deadlineS: 60 } });
    const out = await watchedEvaluation(client, boxed, { state: s, trial: s.trials.get("late")!, prune: false }, () => {});
    expect(out.stopped && labelName(out.stopped.label)).toBe("budget_overrun");
    expect(out.stopped?.message).toMatch(/spent but for the report/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

describe("the judge's test confirmation against the real runner", () => {
  /** A run whose one accepted trial `id` was assembled with `request` and measured at `seconds` a seed. */
  function judgedRun(id: string, request: Req, seconds: number, budgetS: number) {
    return state([
      started({}, { timeBudgetS: budgetS }),
      { runId: RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: id } } },
      { runId: RUN, trialId: id, body: { case: "trialAssembled", value: { request } } },
      evaluated(id, 0.9, 0.01, { seedSeconds: [seconds] }),
      { runId: RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.STOP } } },
    ]);
  }
  const log = createLogger("test-confirm");
  log.level = "silent";

  it("evaluates the kept weights; trains again only when they are gone and the budget has room", async () => {
    const request = digits(DIGITS_CNN, "DigitsNet", { runId: RUN, trialId: "best", seeds: 2, keepWeights: true, recipe: { epochs: 2, batchSize: 32, lr: 0.003 } });
    await evaluateToResult(client, request);
    const kept = (await confirmOnTest(judgedRun("best", request, 5, 600), [client], log, 1000 + 10_000))?.result;
    expect(kept?.seedResults.map((s) => s.epochsCompleted)).toEqual([0, 0]);
    expect(kept?.aggregated.test_accuracy?.mean).toBeGreaterThan(0.7);

    // Weights never kept (another runner's trial, say): 590 s left is room to train 5 s seeds again.
    const lost = { ...request, trialId: "lost" };
    const retrained = (await confirmOnTest(judgedRun("lost", lost, 5, 600), [client], log, 1000 + 10_000))?.result;
    expect(retrained?.seedResults.map((s) => s.epochsCompleted)).toEqual([2, 2]);
    expect(retrained?.aggregated.test_accuracy?.mean).toBeGreaterThan(0.7);
    // The same confirmation again (a redelivered run end): its stored answer, nothing trained (gpu-runner/flights.ts).
    const again = (await confirmOnTest(judgedRun("lost", lost, 5, 600), [client], log, 1000 + 10_000))?.result;
    expect(again?.seedResults.map((s) => s.seconds)).toEqual(retrained?.seedResults.map((s) => s.seconds));
    // 15 s left is not room (the report's 8 s, then twice a seed's 5 s): the run ends without a
    // test result rather than past its budget, and says why.
    const late = { ...request, trialId: "late" };
    expect(await confirmOnTest(judgedRun("late", late, 5, 600), [client], log, 1000 + 585_000)).toEqual({
      skipped: "no runner kept the best trial's weights, and training it again (about 5 s a seed) did not fit the 15 s left",
    });
  });

  it("evaluates a continued training's own kept weights, not those it started from", async () => {
    const request = digits(DIGITS_CNN, "DigitsNet", { runId: RUN, trialId: "first", seeds: 2, keepWeights: true, recipe: { epochs: 1, batchSize: 32, lr: 0.003 } });
    await evaluateToResult(client, request);
    const continued = { ...request, trialId: "continued", initWeights: create(WeightsRefSchema, { runId: RUN, trialId: "first" }) };
    await evaluateToResult(client, continued);
    // Untrained: from the kept weights (a 30-minute warm run's chained last training went untested when this asked for both).
    const kept = (await confirmOnTest(judgedRun("continued", continued, 5, 600), [client], log, 1000 + 10_000))?.result;
    expect(kept?.seedResults.map((s) => s.epochsCompleted)).toEqual([0, 0]);
    expect(kept?.aggregated.test_accuracy?.mean).toBeGreaterThan(0.7);
  });
});

describe("a runner that cannot listen", () => {
  it("stops its workers and leaves no scratch behind when its address is taken", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    const mine = () => readdirSync(tmpdir()).filter((d) => d.startsWith(`runner-scratch-${process.pid}-`)).sort();
    const before = mine();
    const log = createLogger("runner-test");
    log.level = "silent";
    await expect(startRunner({ address: `127.0.0.1:${port}`, slots: 1, logger: log })).rejects.toThrow();
    expect(mine()).toEqual(before);
    taken.close();
  });
});
