/** What a run takes from past runs (agents/planner/past-runs.ts): the distance between datasets, and the evidence it weighs by it. */
import { describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { datasetDistance, pastEvidence, pastFailures, rowConfigs, PAST_WEIGHT, WARM_START_DISTANCE } from "../../agents/planner/past-runs.js";
import { configFingerprint } from "../../agents/planner/identity.js";
import { FailureLabel } from "../../proto/gen/research/v1/common_pb.js";
import { DatasetInfoSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { TrialSummarySchema } from "../../proto/gen/research/v1/lineage_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";
import type { TrainConfigInput } from "../../core/model-config.js";

const info = (i: MessageInitShape<typeof DatasetInfoSchema>) => create(DatasetInfoSchema, { inputDtype: "float32", task: Task.CLASSIFICATION, ...i });
const CLOTHES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"];
const DIGITS = Array.from({ length: 10 }, (_, i) => String(i));
const FASHION = info({ name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, classNames: CLOTHES, nTrain: 54_000 });
const MNIST = info({ name: "mnist", inputShape: [1, 28, 28], numClasses: 10, classNames: DIGITS, nTrain: 54_000 });
const SK_DIGITS = info({ name: "digits", inputShape: [1, 8, 8], numClasses: 10, classNames: DIGITS, nTrain: 1_294 });
const CSV = info({ name: "csv", inputShape: [12], numClasses: 2, classNames: ["0", "1"], nTrain: 800 });

describe("the distance between two datasets", () => {
  it("is 0 for the same description, grows with another name, other classes, size and shape, and is infinite where scores do not compare", () => {
    expect(datasetDistance(FASHION, FASHION)).toBe(0);
    expect(datasetDistance(FASHION, MNIST)).toBe(1.5);
    expect(datasetDistance(MNIST, SK_DIGITS)).toBeCloseTo(1 + Math.log(54_000 / 1_294) + 2 * Math.log(28 / 8), 10);
    // Another CSV with the same columns, classes and size looks the same: the "misleading past" case.
    expect(datasetDistance(CSV, info({ ...CSV, nTrain: 800 }))).toBe(0);
    expect(datasetDistance(CSV, { ...CSV, numClasses: 3 })).toBe(Infinity);
    expect(datasetDistance(CSV, { ...CSV, task: Task.REGRESSION })).toBe(Infinity);
    expect(datasetDistance(CSV, { ...CSV, inputShape: [3, 4] })).toBe(Infinity);
    expect(datasetDistance(FASHION, { ...FASHION, inputDtype: "int64" })).toBe(Infinity);
  });

  it("knows a run recorded before descriptions by its dataset's name alone: the same only for a dataset the runner holds", () => {
    expect(datasetDistance(FASHION, info({ name: "fashion-mnist" }))).toBe(0);
    expect(datasetDistance(FASHION, info({ name: "mnist" }))).toBe(Infinity);
    expect(datasetDistance(CSV, info({ name: "csv" }))).toBe(Infinity);
  });
});

describe("the evidence of past runs", () => {
  it("remembers the configs that failed for a fault of their own, not those that scored too low or were stopped", () => {
    const failed = (trialId: string, label: FailureLabel, runId = "p") =>
      create(TrialSummarySchema, { trialId, runId, model: modelSpec({ name: trialId, layers: [{ type: "flatten" }, { type: "linear", out_features: 8 }] }), train: trainSpec({ epochs: 3 }), failureLabel: label });
    const rows = [failed("crash", FailureLabel.CRASH), failed("oom", FailureLabel.OOM), failed("low", FailureLabel.GATE_MISS), failed("pruned", FailureLabel.PRUNED), failed("cancelled", FailureLabel.CANCELLED), failed("away", FailureLabel.RUNNER_UNAVAILABLE), failed("elsewhere", FailureLabel.CRASH, "forbidden")];
    const fp = (name: string) => {
      const c = rowConfigs(rows.find((r) => r.trialId === name)!)!;
      return configFingerprint(c.model, c.train);
    };
    expect(pastFailures(rows, (r) => r !== "forbidden")).toEqual(new Set([fp("crash"), fp("oom")]));
  });

  const train: TrainConfigInput = { optimizer: "adam", lr: 0.002, epochs: 3, subset: 10_000 };
  const row = (trialId: string, dataset: typeof FASHION, ciLow: number, over: { verdict?: Verdict; epochs?: number; runId?: string } = {}) =>
    create(TrialSummarySchema, {
      trialId,
      runId: over.runId ?? trialId.replace(/-t\d+$/, ""),
      model: modelSpec({ name: "mlp", layers: [{ type: "flatten" }, { type: "linear", out_features: 32 }] }),
      train: trainSpec({ ...train, epochs: over.epochs ?? 3 }),
      params: 25_450,
      ciLow,
      verdict: over.verdict ?? Verdict.ACCEPT,
      dataset,
    });
  const here = { runId: "now", info: FASHION, probe: { subset: 10_000, epochs: 3 }, learns: (r: string) => r !== "forbidden", params: () => 1 };

  it("weighs each past result by its dataset's distance, and proposes first only accepted configs of data that looks the same, strongest first", () => {
    const rows = [
      row("a-t001", FASHION, 0.85),
      row("a-t002", FASHION, 0.88),
      row("b-t001", MNIST, 0.97),
      row("c-t001", FASHION, 0.9, { verdict: Verdict.REJECT }),
      row("d-t001", SK_DIGITS, 0.99),
      row("e-t001", CSV, 0.7),
      // Not evidence: this run's own trial, a run it must not learn from, another fidelity.
      row("now-t001", FASHION, 0.99, { runId: "now" }),
      row("forbidden-t001", FASHION, 0.99),
      row("f-t001", FASHION, 0.99, { epochs: 9 }),
    ];
    const { observations, configs } = pastEvidence(rows, here);
    expect(observations.map((o) => o.weight)).toEqual([PAST_WEIGHT, PAST_WEIGHT, PAST_WEIGHT * Math.exp(-1.5), PAST_WEIGHT, PAST_WEIGHT * Math.exp(-datasetDistance(FASHION, SK_DIGITS))]);
    expect(configs.map((c) => [c.trialId, c.weight])).toEqual([
      ["a-t002", PAST_WEIGHT],
      ["a-t001", PAST_WEIGHT],
    ]);
    expect(datasetDistance(FASHION, MNIST)).toBeGreaterThan(WARM_START_DISTANCE);
  });
});
