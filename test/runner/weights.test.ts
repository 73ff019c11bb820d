import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KEPT_PER_RUN, WeightStore } from "../../gpu-runner/weights.js";
import type { Standing } from "../../core/ranking.js";
import { planEvaluation } from "../../gpu-runner/request.js";
import { ResearchError } from "../../core/failure.js";
import { create } from "@bufbuild/protobuf";
import { EvaluateRequestSchema } from "../../proto/gen/research/v1/runner_pb.js";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

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
