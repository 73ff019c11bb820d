import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { planEvaluation } from "../../gpu-runner/request.js";
import { EvaluateRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";

const request = (recipe: Record<string, unknown>, budget: { maxLatencyMs?: number } = {}) =>
  create(EvaluateRequestSchema, {
    model: { code: "import torch.nn as nn\n", className: "Net" },
    dataset: { name: "digits" },
    recipe,
    budget,
  });

describe("planEvaluation's recipe", () => {
  it("sends the weight average's decay, 0 (off) when unset", () => {
    expect(planEvaluation(request({}), []).job.recipe.ema_decay).toBe(0);
    expect(planEvaluation(request({ emaDecay: 0.999 }), []).job.recipe.ema_decay).toBe(0.999);
  });

  it("refuses a decay outside [0, 1)", () => {
    for (const emaDecay of [1, -0.1, Number.NaN]) {
      expect(() => planEvaluation(request({ emaDecay }), [])).toThrow(/recipe\.ema_decay .* must be in \[0, 1\)/);
    }
  });
});

describe("planEvaluation's budget", () => {
  it("sends the goal's latency limit, 0 (none) when unset, and refuses one below 0 or not finite", () => {
    expect(planEvaluation(request({}), []).job.max_latency_ms).toBe(0);
    expect(planEvaluation(request({}, { maxLatencyMs: 1.5 }), []).job.max_latency_ms).toBe(1.5);
    for (const maxLatencyMs of [-1, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => planEvaluation(request({}, { maxLatencyMs }), [])).toThrow(/budget\.max_latency_ms .* must be a finite number >= 0/);
    }
  });
});

describe("planEvaluation's dataset", () => {
  it("needs the shape and classes of data the runner draws (a task's generated dataset)", () => {
    const drawn = (dataset: Record<string, unknown>) => create(EvaluateRequestSchema, { model: { code: "import torch.nn as nn\n", className: "Net" }, dataset, recipe: {} });
    expect(() => planEvaluation(drawn({ name: "synthetic" }), [])).toThrow(/dataset\.shape is required for synthetic.*num_classes >= 2 is required for synthetic/s);
    expect(planEvaluation(drawn({ name: "synthetic", shape: [1, 8, 8], numClasses: 4 }), []).job.dataset.shape).toEqual([1, 8, 8]);
    // The runner's own copies need neither.
    expect(planEvaluation(drawn({ name: "digits" }), []).job.dataset.shape).toEqual([]);
  });
});
