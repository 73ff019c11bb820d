/** The export document's rule (lineage-store/export.ts) on a stored run's events; the trackers' side is test/cli/from.test.ts's. */
import { describe, expect, it } from "vitest";
import { exportDocument, exportRun, flatten } from "../../lineage-store/export.js";
import { foldRun } from "../../swarm/run-state.js";
import { runEvents, TRIALS } from "./fixtures.js";
import { evaluated, proposed, started, state as agentState } from "../agents/helpers.js";
import { Cost } from "../../proto/gen/research/v1/common_pb.js";

describe("the export document", () => {
  it("flattens configs to dotted keys, keeping empty lists and objects and nulls as text", () => {
    expect(flatten({ name: "cnn", layers: [{ type: "conv2d", out_channels: 16 }, { type: "flatten" }], augment: {}, extra: [], lr: 0.001, amp: false, none: null }, "model")).toEqual({
      "model.name": "cnn",
      "model.layers.0.type": "conv2d",
      "model.layers.0.out_channels": 16,
      "model.layers.1.type": "flatten",
      "model.augment": "{}",
      "model.extra": "[]",
      "model.lr": 0.001,
      "model.amp": false,
      "model.none": "null",
    });
  });

  it("holds every proposed trial with its verdict, failure, fidelity and params; scores only where the stored events have them", () => {
    const state = foldRun("rx", runEvents("rx"));
    const doc = exportDocument([exportRun(state, "# report\n")]);
    expect(doc).toMatchObject({ kind: "research-swarm.export", version: 1 });
    const run = doc.runs[0]!;
    expect(run).toMatchObject({ run_id: "rx", metric: "accuracy", higher_is_better: true, status: "budget_exhausted", report_markdown: "# report\n", dataset: "fashion-mnist" });
    expect(run.params).toMatchObject({ "goal.dataset": "fashion-mnist", "goal.target": 0.92, "settings.seeds": 3 });
    expect(run.trials.map((t) => t.trial_id)).toEqual(state.order);
    TRIALS.forEach((spec, i) => {
      const t = run.trials[i]!;
      expect(t.hypothesis).toBe(spec.hypothesis);
      expect(t.failure_label).toBe(spec.fails?.label ?? null);
      expect(t.verdict).toBe(spec.fails ? "reject" : "accept");
      expect(t.parent_ids).toEqual(spec.parent === undefined ? [] : [state.order[spec.parent]]);
      // The fold's configs, defaults filled (the schema's epochs), or the proposal's JSON as written.
      if (!spec.train) expect(t.params).toMatchObject({ "train.optimizer": "adam", "train.lr": 0.001 });
      if (state.trials.get(t.trial_id)!.train) expect(typeof t.params["train.epochs"]).toBe("number");
      expect(t.fidelity.rung).toBe(0);
      // The pessimistic end of the interval: the fixture's CI low is the mean less 0.01.
      if (spec.score !== undefined) expect(t.score).toBeCloseTo(spec.score - 0.01, 10);
      else expect(t.score).toBeNull();
      // The fixture's results carry no seeds, so no curves and no confusion matrix.
      expect(t.seeds).toEqual([]);
      expect(t.confusion).toBeNull();
    });
    expect(run.trials.filter((t) => t.best).map((t) => t.trial_id)).toEqual([run.best_trial_id]);
  });

  it("gives each trial its latency beside its parameter count where the runner timed it, and a Pareto goal's objectives with the goal's fields", () => {
    const s = agentState([
      started({}, { dataset: "fashion-mnist", openEnded: true, target: 0, tradeOffs: [Cost.PARAMS, Cost.LATENCY], maxLatencyMs: 2 }),
      proposed("a"),
      evaluated("a", 0.85, 0.01, { params: 20_000n, latencyMs: [0.6, 0.5, 0.7] }),
      proposed("b"),
      evaluated("b", 0.9, 0.01, { params: 400_000n }),
    ]);
    const run = exportRun(s, "");
    // The median of its seeds' medians; a trial the runner did not time has none.
    expect(run.trials.map((t) => [t.trial_id, t.num_params, t.latency_ms])).toEqual([["a", 20_000, 0.6], ["b", 400_000, null]]);
    expect(run.params).toMatchObject({ "goal.trade_offs.0": "params", "goal.trade_offs.1": "latency", "goal.max_latency_ms": 2 });
    const plain = exportRun(foldRun("rx", runEvents("rx")), "");
    expect(plain.params).toMatchObject({ "goal.trade_offs": "[]", "goal.max_latency_ms": "null" });
    expect(plain.trials.every((t) => t.latency_ms === null)).toBe(true);
  });
});
