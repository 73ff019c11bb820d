import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { planEvaluation } from "../../gpu-runner/request.js";
import { EvaluateRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";

const request = (recipe: Record<string, unknown>) =>
  create(EvaluateRequestSchema, {
    model: { code: "import torch.nn as nn\n", className: "Net" },
    dataset: { name: "digits" },
    recipe,
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
