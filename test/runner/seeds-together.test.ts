/**
 * A trial's seeds in one job (gpu-runner --seeds together; python/stack.py Stack), through the
 * real runner: real gRPC, sandbox and torch. Each seed's numbers are those of its own job, its
 * weights are kept under its own name, and a model vmap cannot run trains seed by seed, saying why.
 * A GPU is what "auto" puts seeds together for; a CPU runner told to does the same work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createLogger } from "../../core/logger.js";
import { connectRunner, evaluateToResult, type RunnerClient } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import type { EvaluateRequestSchema, EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { DIGITS_CNN } from "../helpers/models.js";
import { datasetFixtures } from "../helpers/fixtures.js";

type Req = MessageInitShape<typeof EvaluateRequestSchema>;
let runner: RunningRunner;
let client: RunnerClient;

const request = (extra: Partial<Req>): Req =>
  ({
    runId: "r-together",
    trialId: "t",
    model: { code: DIGITS_CNN, className: "DigitsNet" },
    dataset: { name: "digits", subset: 600 },
    recipe: { epochs: 2, batchSize: 32, lr: 0.003, augment: { cropPadding: 1 } },
    seeds: 1,
    budget: { timeBudgetS: 120 },
    ...extra,
  }) as Req;

const valOf = (r: EvalResult) => r.seedResults.map((s) => [s.seed, s.metrics.val_accuracy!]).sort((a, b) => a[0]! - b[0]!);

beforeAll(async () => {
  const logger = createLogger("test-together");
  logger.level = "warn";
  runner = await startRunner({ slots: 2, seeds: "together", dataRoots: [datasetFixtures()], logger });
  client = connectRunner(runner.address);
});

afterAll(async () => {
  client?.close();
  await runner?.close();
});

describe("a trial's seeds trained together", () => {
  it("scores each seed as its own job would, and keeps each seed's weights for the test confirmation", async () => {
    const together = await evaluateToResult(client, request({ trialId: "t3", seeds: 3, baseSeed: 4, keepWeights: true }));
    expect(together.seedResults.map((s) => s.seedsTogether)).toEqual([3, 3, 3]);
    expect(together.seedsApart).toBe("");
    // A single seed is a job of its own: the reference for each seed of the three.
    const alone = await Promise.all([4, 5, 6].map((seed) => evaluateToResult(client, request({ trialId: `a${seed}`, baseSeed: seed }))));
    expect(alone.map((r) => r.seedResults[0]!.seedsTogether)).toEqual([1, 1, 1]);
    // Predictions agree to float rounding: at most one of the 60 validation digits on a near-tie.
    const examples = together.seedResults[0]!.valExamples;
    valOf(together).forEach(([seed, acc], i) => {
      expect(seed).toBe(4 + i);
      expect(Math.abs(acc! - alone[i]!.seedResults[0]!.metrics.val_accuracy!)).toBeLessThanOrEqual(1 / examples + 1e-9);
    });
    expect(new Set(valOf(together).map(([, acc]) => acc)).size).toBeGreaterThan(1);
    // Each seed says which validation examples it got right, one bit each: as many as its accuracy counts.
    const right = (bits: Uint8Array) => bits.reduce((n, byte) => n + [...byte.toString(2)].filter((b) => b === "1").length, 0);
    for (const s of together.seedResults) {
      expect(s.valCorrect.length).toBe(Math.ceil(examples / 8));
      expect(right(s.valCorrect)).toBe(Math.round(s.metrics.val_accuracy! * examples));
    }

    const confirmed = await evaluateToResult(client, request({ trialId: "t3-test", seeds: 3, baseSeed: 4, weightsOf: "t3", evaluateTest: true }));
    expect(confirmed.seedResults.map((s) => s.epochsCompleted)).toEqual([0, 0, 0]);
    expect(valOf(confirmed)).toEqual(valOf(together));
    expect(confirmed.seedResults.map((s) => s.valCorrect)).toEqual(together.seedResults.map((s) => s.valCorrect));
    expect(confirmed.aggregated.test_accuracy!.mean).toBeGreaterThan(0.5); // two epochs of 540 digits; chance is 0.1
  });

  it("trains seeds apart that run out of memory together after they started", async () => {
    // A stand-in for a GPU's out-of-memory error in the second stacked training step (the check
    // before training makes the first stacked call): a seed alone never raises it.
    const hungry = DIGITS_CNN.replace("import torch.nn as nn", "import torch\nimport torch.nn as nn\nCALLS = [0]").replace(
      "    def forward(self, x):\n",
      "    def forward(self, x):\n        if torch._C._functorch.is_batchedtensor(x):\n            CALLS[0] += 1\n            if CALLS[0] > 2:\n                raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n",
    );
    const r = await evaluateToResult(client, request({ trialId: "oom", model: { code: hungry, className: "DigitsNet" }, seeds: 2 }));
    expect(r.seedsApart).toMatch(/^the 2 seeds ran out of memory together: .*CUDA out of memory/);
    expect(r.seedResults.map((s) => [s.seed, s.seedsTogether, s.epochsCompleted])).toEqual([[0, 1, 2], [1, 1, 2]]);
  });

  it("trains a model vmap cannot run seed by seed, says why, and sends its next trial apart at once", async () => {
    const branching = DIGITS_CNN.replace("return self.head(self.features(x))", "if x.sum() > 1e9:\n            return None\n        return self.head(self.features(x))");
    for (const trialId of ["b1", "b2"]) {
      const r = await evaluateToResult(client, request({ trialId, model: { code: branching, className: "DigitsNet" }, seeds: 2 }));
      expect(r.seedsApart).toMatch(/^vmap cannot run the model: /);
      expect(r.seedResults.map((s) => [s.seed, s.seedsTogether])).toEqual([[0, 1], [1, 1]]);
      expect(r.aggregated.val_accuracy!.mean).toBeGreaterThan(0.5);
    }
  });
});
