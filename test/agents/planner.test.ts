import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { adoptedConcepts, blocksOf } from "../../core/brief.js";
import { compileModel } from "../../core/compiler/compile.js";
import { argumentChanges, isCodeModel, searchableArguments, type ModelConfigInput, type TrainConfigInput, type TrialModelInput } from "../../core/model-config.js";
import { paramsCounter, workCounter } from "../../agents/planner/params.js";
import { predictedSeconds } from "../../agents/planner/time-model.js";
import { mulberry32, probeFidelity } from "../../agents/planner/proposals.js";
import { smallestTemplate } from "../../core/tasks/fit.js";
import { initialBuiltin, nextBuiltin } from "../../agents/planner/policies/builtin.js";
import { baselineProposals, handProposal } from "../../agents/planner/policies/hand.js";
import { randomPolicy } from "../../agents/planner/policies/random.js";
import type { PlanInput } from "../../agents/planner/types.js";
import { interventionEvent } from "../../swarm/interventions.js";
import { queuedProposals } from "../../swarm/run-state.js";
import { fingerprint } from "../../agents/planner/identity.js";
import { ashaPromotion } from "../../agents/planner/promotion.js";
import { stalledOn, stallQuery } from "../../agents/planner/stall.js";
import { MUTATIONS, NOT_AN_EDIT } from "../../agents/planner/mutations.js";
import { MUTATION } from "../../core/enums.js";
import { contextFor } from "../../agents/planner/llm-policy.js";
import { applies, DRAWN, outsideSpace, parseSpace, searchStart, SPACE, spaceMessage, valueOf } from "../../core/space.js";
import { researchBrief } from "../../research/research.js";
import { ArgumentKind, type DatasetInfo, DatasetInfoSchema, Metric, ModelArgumentSchema, SeedResultSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import { Mutation, Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import type { EventInit } from "../../bus/index.js";
import { evaluated, RUN, started, state, validated } from "./helpers.js";
import { lastTrainingDueS } from "../../agents/planner/promises.js";
import { briefMessage, modelSpec, trainSpec } from "../../core/config-wire.js";

const FASHION = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000 });

/** The templates and their edits are model_configs: compiled as the coder would. */
function compiled(m: TrialModelInput) {
  if (isCodeModel(m)) throw new Error(`${m.class_name}: a model in Python where a model_config was expected`);
  return compileModel(m, { inputShape: [1, 28, 28], numClasses: 10 });
}

function input(events: EventInit[], maxParams = 0): PlanInput {
  const s = state([started({ parallel: 2 }, { dataset: "fashion-mnist", maxParams: BigInt(maxParams) }), ...events]);
  return {
    state: s,
    info: FASHION,
    rng: mulberry32(7),
    params: paramsCounter(s, FASHION),
    failedElsewhere: new Set(),
  };
}

/** An evaluation with `seeds` seeds of `seconds` each, as long as the whole evaluation. */
function timed(e: EventInit, seconds: number, seeds = 1): EventInit {
  const result = (e.body as { value: { result: { seedResults: unknown[]; seconds: number } } }).value.result;
  result.seedResults = Array.from({ length: seeds }, (_, seed) => create(SeedResultSchema, { seed, seconds }));
  result.seconds = seconds;
  return e;
}

const brief = (): EventInit => ({
  runId: RUN,
  body: { case: "briefReady", value: { brief: briefMessage(researchBrief("small cnn for fashion-mnist with squeeze excitation", { dataset: "fashion-mnist" })) } },
});

describe("a run started from a person's model (launch --from)", () => {
  const model: ModelConfigInput = { name: "mine", layers: [{ type: "flatten" }, { type: "linear", out_features: 32 }] };
  const train: TrainConfigInput = { optimizer: "sgd", lr: 0.01, epochs: 2, batch_size: 64 };
  const withStart = (parallel: number, extra: EventInit[] = []): PlanInput => {
    const first = started({ parallel }, { dataset: "fashion-mnist" });
    (first.body!.value as { start?: unknown }).start = { origin: "mine.yaml", model: modelSpec(model), train: trainSpec(train) };
    return { ...input([]), state: state([first, ...extra]) };
  };

  it("folds the starting point once, as its author wrote it", () => {
    expect(withStart(2).state.start).toEqual({ origin: "mine.yaml", model, train });
  });

  it("proposes it as trial 0 on its own recipe, then at the probe's fidelity as the anchor of its edits", () => {
    const inp = withStart(2);
    const [zero, anchor] = baselineProposals(inp);
    // Trial 0: the run's seeds (none set), the top rung, never promoted; its recipe as given.
    expect(zero).toMatchObject({ rung: 3, parentIds: [], mutation: "baseline", model, train });
    expect(zero!.seeds).toBeUndefined();
    expect(zero!.hypothesis).toBe("the starting point, mine from mine.yaml, on its own recipe");
    const probe = probeFidelity(inp);
    expect(anchor).toMatchObject({ rung: 0, seeds: 1, parentIds: [`${RUN}-t000`], mutation: "baseline", model, train: { ...train, subset: probe.subset, epochs: probe.epochs } });
    // Once proposed, each is not proposed again; with one trial at a time the anchor comes second.
    const zeroProposed: EventInit = { runId: RUN, trialId: `${RUN}-t000`, body: { case: "trialProposed", value: { rung: 3, mutation: Mutation.BASELINE, model: modelSpec(model), train: trainSpec(train) } } };
    expect(baselineProposals(withStart(1, [zeroProposed]))).toEqual([anchor]);
    const anchorProposed: EventInit = { runId: RUN, trialId: `${RUN}-t001`, body: { case: "trialProposed", value: { rung: 0, seeds: 1, parentIds: [`${RUN}-t000`], mutation: Mutation.BASELINE, model: modelSpec(model), train: trainSpec({}) } } };
    expect(baselineProposals(withStart(1, [zeroProposed, anchorProposed]))).toEqual([]);
    // A run from templates has none.
    expect(baselineProposals(input([]))).toEqual([]);
  });
});

describe("a run started from a model in Python (launch --from model.py --class Net)", () => {
  const model: TrialModelInput = { name: "Net", class_name: "Net", init_kwargs: {} };
  const train: TrainConfigInput = { optimizer: "adam", lr: 2e-3, epochs: 2 };
  const argument = (name: string, kind: ArgumentKind, defaultValue: number) => create(ModelArgumentSchema, { name, kind, defaultValue });
  // What the runner found in the constructor: Net(num_classes=10, in_channels=1, width=32, depth=2, dropout=0.1, bn=True).
  const args = [
    argument("num_classes", ArgumentKind.INT, 10),
    argument("in_channels", ArgumentKind.INT, 1),
    argument("width", ArgumentKind.INT, 32),
    argument("depth", ArgumentKind.INT, 2),
    argument("dropout", ArgumentKind.FLOAT, 0.1),
    argument("bn", ArgumentKind.BOOL, 1),
  ];
  const codeRun = (extra: EventInit[] = []) => {
    const first = started({ parallel: 2 }, { dataset: "fashion-mnist" });
    (first.body!.value as { start?: unknown }).start = { origin: "net.py", model: modelSpec(model), train: trainSpec(train), modelCode: "class Net: ...", arguments: args, params: 50_000n };
    const s = state([first, ...extra]);
    return (seed: number): PlanInput => ({ ...input([]), state: s, rng: mulberry32(seed), params: paramsCounter(s, FASHION) });
  };
  const anchor: EventInit = { runId: RUN, trialId: `${RUN}-t001`, body: { case: "trialProposed", value: { rung: 0, seeds: 1, parentIds: [`${RUN}-t000`], mutation: Mutation.BASELINE, model: modelSpec(model), train: trainSpec(train) } } };

  it("folds the source and what the runner found in it", () => {
    const start = codeRun()(0).state.start!;
    expect(start.model).toEqual(model);
    expect(start.code).toEqual({ source: "class Net: ...", arguments: args, params: 50_000 });
  });

  it("searches the constructor's arguments that set capacity, a step at a time, and never those that fix the data's shape", () => {
    expect(searchableArguments(args, FASHION).map((a) => a.name)).toEqual(["width", "depth", "dropout", "bn"]);
    const plan = codeRun([anchor, evaluated(`${RUN}-t001`, 0.8), { runId: RUN, trialId: `${RUN}-t001`, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } }]);
    const moves = new Set<string>();
    for (let seed = 0; seed < 64; seed++) {
      const p = nextBuiltin(plan(seed), 2)!;
      expect(isCodeModel(p.model)).toBe(true);
      if (p.mutation !== "argument") continue;
      const kwargs = (p.model as { init_kwargs: Record<string, number | boolean> }).init_kwargs;
      expect(Object.keys(kwargs)).toHaveLength(1);
      const [name, value] = Object.entries(kwargs)[0]!;
      moves.add(`${name}=${String(value)}`);
      expect(p.hypothesis).toMatch(new RegExp(`^set ${name} (32|2|0.1|true) -> ${String(value)} on top of ${RUN}-t001 `));
      // The layer edits have nothing to work on in code: the architecture surface is the arguments.
      expect(p.surface).toBe("architecture");
    }
    expect(moves).toEqual(new Set(["width=48", "width=21", "depth=3", "depth=1", "dropout=0.2", "dropout=0", "bn=false"]));
  });

  it("edits the anchor while it still trains instead of starting a template", () => {
    const p = nextBuiltin(codeRun([anchor])(1), 2)!;
    expect(p.parentIds).toEqual([`${RUN}-t001`]);
    expect(p.hypothesis).toContain("(still training)");
    expect(isCodeModel(p.model)).toBe(true);
  });

  it("counts a code model's parameters as the runner measured them", () => {
    const summarized: EventInit = { runId: RUN, trialId: `${RUN}-t002`, body: { case: "trialAssembled", value: { summary: { totalParams: 80_000n } } } };
    const wide = { ...model, init_kwargs: { width: 48 } };
    const proposedWide: EventInit = { runId: RUN, trialId: `${RUN}-t002`, body: { case: "trialProposed", value: { model: modelSpec(wide), train: trainSpec({}) } } };
    const count = codeRun([proposedWide, summarized])(0).params;
    expect(count(wide)).toBe(80_000);
    // Not built yet: the starting point's size, as the launcher measured it.
    expect(count({ ...model, init_kwargs: { depth: 3 } })).toBe(50_000);
    expect(argumentChanges(model, wide, args)).toEqual([{ name: "width", from: 32, to: 48 }]);
  });
});

describe("built-in planner", () => {
  it("starts from templates that adopt the brief's concepts, on a subset of a large dataset", () => {
    const proposals = initialBuiltin(input([brief()]), 2);
    expect(proposals).toHaveLength(2);
    const suggested = researchBrief("small cnn for fashion-mnist with squeeze excitation", { dataset: "fashion-mnist" });
    expect(adoptedConcepts([suggested], blocksOf(proposals[0]!.model, proposals[0]!.train)).length).toBeGreaterThan(0);
    expect(proposals[0]!.train.subset).toBe(10_000);
    // A probe ranks; it claims nothing: one seed.
    expect(proposals.map((p) => p.seeds)).toEqual([1, 1]);
    expect(fingerprint(proposals[0]!.model, proposals[0]!.train)).not.toBe(fingerprint(proposals[1]!.model, proposals[1]!.train));
  });

  it("respects the parameter limit, narrowing templates to fit it rather than proposing nothing", () => {
    const proposals = initialBuiltin(input([], 15_000), 3);
    // All image templates but ghost-net (2.7k) are over 15k parameters as written: two of these were narrowed.
    expect(proposals).toHaveLength(3);
    for (const p of proposals) {
      const r = compiled(p.model);
      expect(r.ok && r.params).toBeLessThanOrEqual(15_000);
    }
    // How far narrowing goes, for the launch to say before it starts that a limit is below it.
    const smallest = smallestTemplate(FASHION, "cpu", 100)!;
    expect(smallest.params).toBeGreaterThan(100);
    expect(smallestTemplate(FASHION, "cpu", 15_000)!.params).toBeLessThanOrEqual(15_000);
  });

  it("edits the best accepted trial and never repeats a configuration", () => {
    const first = initialBuiltin(input([]), 1)[0]!;
    const events: EventInit[] = [
      { runId: RUN, trialId: "t0", body: { case: "trialProposed", value: { surface: Surface.ARCHITECTURE, model: modelSpec(first.model), train: trainSpec(first.train) } } },
      evaluated("t0", 0.88),
      { runId: RUN, trialId: "t0", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ];
    const seen = new Set([fingerprint(first.model, first.train)]);
    for (let i = 0; i < 5; i++) {
      const p = nextBuiltin({ ...input(events), rng: mulberry32(i) }, 2 + i)!;
      expect(p.parentIds).toEqual(["t0"]);
      expect(seen.has(fingerprint(p.model, p.train))).toBe(false);
    }
  });

  it("starts from the strongest past configs that fit this goal, before the templates, each evaluated here", () => {
    const [a, b, c] = initialBuiltin(input([]), 3);
    const past = (trialId: string, p: typeof a, ciLow: number) => ({ trialId, runId: "r-past", model: p!.model, train: validated(p!.train), ciLow, weight: 0.5 });
    // Strongest first: what the planner's lineage query hands over (agents/planner/main.ts pastRuns).
    const pastConfigs = [past("r-past-t007", c, 0.9), past("r-past-t002", b, 0.85), past("r-past-t001", a, 0.8)];
    // A goal with a target starts from the templates: it is after the first config that meets it.
    expect(initialBuiltin({ ...input([]), pastConfigs }, 3).map((p) => p.mutation)).toEqual(["template", "template", "template"]);
    const openEnded = (maxParams = 0) => ({ ...input([], maxParams), state: state([started({ parallel: 2 }, { dataset: "fashion-mnist", maxParams: BigInt(maxParams), target: 0, openEnded: true })]) });
    const warm = initialBuiltin({ ...openEnded(), pastConfigs }, 3);
    expect(warm.map((p) => p.mutation)).toEqual(["warm_start", "warm_start", "template"]);
    expect(warm.map((p) => p.informedBy)).toEqual([[{ trialId: "r-past-t007", weight: 0.5 }], [{ trialId: "r-past-t002", weight: 0.5 }], undefined]);
    expect(fingerprint(warm[0]!.model, warm[0]!.train)).toBe(fingerprint(c!.model, c!.train));
    // A probe like any template's: rung 0, one seed; its past score only ordered the candidates.
    expect(warm[0]).toMatchObject({ rung: 0, seeds: 1, parentIds: [] });
    expect(warm[0]!.hypothesis).toContain("from past run r-past (r-past-t007, CI low 90.00% there)");
    // The templates that follow are not the past configs again.
    expect(fingerprint(warm[2]!.model, warm[2]!.train)).not.toBe(fingerprint(b!.model, b!.train));
    // A past config over this goal's parameter limit is passed over, not narrowed.
    const paramsOf = (m: TrialModelInput) => {
      const r = compiled(m);
      return r.ok ? r.params : Infinity;
    };
    // A limit the middle-sized past config meets and the largest does not.
    const limit = pastConfigs.map((p) => paramsOf(p.model)).sort((x, y) => x - y)[1]!;
    const fitting = pastConfigs.filter((p) => paramsOf(p.model) <= limit).map((p) => [{ trialId: p.trialId, weight: p.weight }]);
    expect(fitting).toHaveLength(2);
    const limited = initialBuiltin({ ...openEnded(limit), pastConfigs }, 3);
    expect(limited.filter((p) => p.mutation === "warm_start").map((p) => p.informedBy)).toEqual(fitting.slice(0, 2));
  });

  it("does not propose what failed elsewhere in the lineage", () => {
    const base = input([]);
    const first = initialBuiltin(base, 1)[0]!;
    const again = initialBuiltin({ ...base, failedElsewhere: new Set([fingerprint(first.model, first.train)]) }, 1)[0]!;
    expect(fingerprint(again.model, again.train)).not.toBe(fingerprint(first.model, first.train));
  });

  it("lets the surrogate choose among the chosen surface's edits once four rung-0 trials are in", () => {
    const starts = initialBuiltin(input([]), 4);
    const events: EventInit[] = starts.flatMap((p, i): EventInit[] => [
      { runId: RUN, trialId: `t${i}`, body: { case: "trialProposed", value: { surface: Surface.ARCHITECTURE, model: modelSpec(p.model), train: trainSpec(p.train) } } },
      evaluated(`t${i}`, 0.8 + i / 50),
      { runId: RUN, trialId: `t${i}`, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ]);
    const few = nextBuiltin({ ...input(events.slice(0, 9)), rng: mulberry32(1) }, 4)!;
    expect(few.rationale).not.toMatch(/surrogate/);
    const p = nextBuiltin({ ...input(events), rng: mulberry32(1) }, 4)!;
    expect(p.rationale).toMatch(/surrogate \(TPE\) ranked \S+ -?\d+\.\d\d/);
    expect(p.rung).toBe(0);
  });

  it("says which way every proposal was made, as a Mutation", () => {
    const first = initialBuiltin(input([brief()]), 3);
    const events: EventInit[] = first.flatMap((p, i): EventInit[] => [
      { runId: RUN, trialId: `t${i}`, body: { case: "trialProposed", value: { surface: Surface.ARCHITECTURE, model: modelSpec(p.model), train: trainSpec(p.train) } } },
      timed(evaluated(`t${i}`, 0.85 + i / 100), 10),
      { runId: RUN, trialId: `t${i}`, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ]);
    const edits = Array.from({ length: 12 }, (_, i) => nextBuiltin({ ...input(events), rng: mulberry32(i) }, 3 + i)!);
    const proposals = [...first, ...edits, randomPolicy(input([]), 0)!, ashaPromotion({ ...input(events), nowMs: 1000 })!];
    for (const p of proposals) expect(MUTATION.value(p.mutation), p.hypothesis).not.toBe(Mutation.UNSPECIFIED);
    for (const p of proposals) expect(MUTATION.value(p.mutation), p.hypothesis).toBeDefined();
    expect(new Set(first.map((p) => p.mutation))).toEqual(new Set(["template"]));
    expect(edits.every((p) => MUTATIONS.some((m) => m.name === p.mutation))).toBe(true);
    expect(proposals.slice(-2).map((p) => p.mutation)).toEqual(["random", "promotion"]);
  });

  it("takes a person's queued proposal as they wrote it, their training over the probe recipe", () => {
    const model = { name: "hand", layers: [{ type: "flatten" as const }, { type: "linear" as const, out_features: 32 }] };
    const check = interventionEvent(input([]).state, { kind: "propose", hypothesis: "a small MLP", model_config: model, train_config: { lr: 0.003 } }, "test:alice");
    if (!check.ok) throw new Error(check.error);
    const withQueued = input([check.event]);
    const queued = queuedProposals(withQueued.state);
    expect(queued).toHaveLength(1);
    const p = handProposal(withQueued, queued[0]!);
    expect(p).toMatchObject({ rung: 0, hypothesis: "a small MLP", mutation: "hand", model, interventionId: queued[0]!.intervention.interventionId });
    expect(p.train).toMatchObject({ ...probeFidelity(withQueued), lr: 0.003 });
  });

  it("the random baseline draws valid configs", () => {
    const p = randomPolicy(input([]), 0)!;
    expect(compiled(p.model).ok).toBe(true);
  });

  it("the random baseline searches every row with a prior that applies to the data, and no other", () => {
    const draws = Array.from({ length: 40 }, (_, i) => randomPolicy({ ...input([]), rng: mulberry32(i) }, i)!.train);
    const varied = SPACE.filter((r) => new Set(draws.map((t) => JSON.stringify(valueOf(t, r.name)))).size > 1).map((r) => r.name);
    // The subset is the draw's fidelity, drawn beside the rows (a slice of the probes' or the whole split).
    expect(varied.filter((n) => n !== "subset")).toEqual(DRAWN.filter((n) => applies(n, FASHION)));
    expect(DRAWN).toEqual(expect.arrayContaining(["optimizer", "lr", "schedule", "label_smoothing", "grad_clip", "batch_size", "epochs", "augment.crop_padding"]));
    const table = create(DatasetInfoSchema, { name: "csv", inputShape: [8], inputDtype: "float32", task: Task.REGRESSION, nTrain: 2000, nVal: 500 });
    const onTable = { ...input([]), info: table, params: paramsCounter(input([]).state, table) };
    const tabular = Array.from({ length: 10 }, (_, i) => randomPolicy({ ...onTable, rng: mulberry32(i) }, i)!.train);
    // Label smoothing means nothing to a regression, cropping nothing to a table: never drawn there.
    for (const t of tabular) expect([t.label_smoothing ?? 0, t.augment?.crop_padding ?? 0]).toEqual([0, 0]);
  });

  it("has an edit for every Mutation value that names one, and the proto a value for every edit", () => {
    const notEdits: readonly string[] = NOT_AN_EDIT;
    expect(MUTATIONS.map((m) => m.name).sort()).toEqual(MUTATION.names.filter((n) => !notEdits.includes(n)).sort());
  });

  it("starts an optimizer where its rows say, for its first recipes and its optimizer edit alike", () => {
    expect(searchStart("sgd")).toEqual({ optimizer: "sgd", lr: 0.05, momentum: 0.9, nesterov: true });
    expect(searchStart("adam")).toEqual({ optimizer: "adam", lr: 2e-3 });
    const switched = MUTATIONS.find((m) => m.name === "optimizer")!;
    const g = { model: { name: "t", layers: [{ type: "flatten" as const }] }, train: { optimizer: "adam" as const, lr: 2e-3 } };
    const to = switched.apply(g, { rng: () => 0, info: FASHION, device: "cpu", arguments: [] })!.train;
    expect(to).toMatchObject(searchStart(to.optimizer!));
  });
});

describe("LLM planner context", () => {
  it("tells the model the objective of an open-ended goal instead of a target of 0", () => {
    const open = { ...input([]), state: state([started({}, { dataset: "fashion-mnist", openEnded: true })]) };
    const goal = JSON.parse(contextFor(open, 0)).goal;
    expect(goal.objective).toMatch(/maximise/);
    expect(goal).not.toHaveProperty("target_val_accuracy");
    const target = { ...input([]), state: state([started({}, { dataset: "fashion-mnist", target: 0.9 })]) };
    expect(JSON.parse(contextFor(target, 0)).goal.target_val_accuracy).toBe(0.9);
  });
});

describe("stalls", () => {
  it("asks once after three trials on a surface without gain", () => {
    const events: EventInit[] = [];
    for (const [i, gain] of [0.01, 0, -0.002, 0].entries()) {
      const id = `t${i}`;
      events.push({ runId: RUN, trialId: id, body: { case: "trialProposed", value: { surface: Surface.REGULARISATION, parentIds: ["t9"] } } });
      events.push({ runId: RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE, gain } } });
    }
    const s = state([started(), ...events]);
    expect(stalledOn(s, s.trials.get("t2")!)).toBeUndefined();
    expect(stalledOn(s, s.trials.get("t3")!)?.map((t) => t.id)).toEqual(["t1", "t2", "t3"]);
    const asked = state([
      started(),
      ...events,
      { runId: RUN, body: { case: "researchRequested", value: { surface: Surface.REGULARISATION, trialIds: ["t1", "t2", "t3"] } } },
    ]);
    expect(stalledOn(asked, asked.trials.get("t3")!)).toBeUndefined();
  });

  it("asks about what the stalled trials tried, by their Mutation, whatever their hypotheses say", () => {
    const run = (hypothesis: (m: string) => string) => {
      const events: EventInit[] = [];
      for (const [i, m] of (["dropout", "weight_decay", "label_smoothing"] as const).entries()) {
        const id = `t${i}`;
        const value = { surface: Surface.REGULARISATION, parentIds: ["t9"], mutation: MUTATION.value(m)!, hypothesis: hypothesis(m) };
        events.push({ runId: RUN, trialId: id, body: { case: "trialProposed", value } });
        events.push({ runId: RUN, trialId: id, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE, gain: 0 } } });
      }
      const s = state([started({}, { dataset: "fashion-mnist" }), ...events]);
      return stallQuery(s, stalledOn(s, s.trials.get("t2")!)!);
    };
    const query = run((m) => `${m} on top of t9 (CI low 88.00%) improves validation accuracy`);
    expect(query).toBe(
      "regularisation techniques for small models on fashion-mnist beyond more dropout before the head; weight decay; label smoothing 0.1",
    );
    expect(run((m) => `reworded: we try ${m} and hope`)).toBe(query);
  });
});

describe("a language model's start and edits", () => {
  const CORPUS = create(DatasetInfoSchema, { name: "text", inputShape: [256], numClasses: 0, inputDtype: "int64", vocabSize: 256, nTrain: 2813, nVal: 312, task: Task.LANGUAGE_MODELLING });
  const lmInput = (maxParams = 0): PlanInput => {
    const s = state([started({ parallel: 2 }, { dataset: "text", objective: Metric.BITS_PER_BYTE, maxParams: BigInt(maxParams) })]);
    return { state: s, info: CORPUS, rng: mulberry32(3), params: paramsCounter(s, CORPUS), failedElsewhere: new Set() };
  };
  const env = { info: CORPUS, device: "cpu" as const, arguments: [] };
  const edit = (name: string) => MUTATIONS.find((m) => m.name === name)!;

  it("starts from a neural n-gram model, a causal transformer and a GRU on a slice of rows, at their own batch of windows", () => {
    const [ngram, transformer, gru] = initialBuiltin(lmInput(), 3);
    expect([ngram!.model.name, transformer!.model.name, gru!.model.name]).toEqual(["byte-ngram", "byte-transformer", "byte-gru"]);
    // 1,000 rows of 256 targets each: a CPU probe's slice of a corpus, counted in rows.
    expect(transformer!.train).toMatchObject({ subset: 1000, batch_size: 16, context: 128, lr: 2e-3 });
    expect(ngram!.train).toMatchObject({ subset: 1000, batch_size: 32, context: 128, lr: 1.5e-2, weight_decay: 0.1 });
    const count = paramsCounter(lmInput().state, CORPUS);
    expect(count(transformer!.model)).toBe(462_592);
    // A table of 2^17 rows of 32 for 8 orders, an MLP of 512 and the head.
    expect(count(ngram!.model)).toBe((1 << 17) * 32 + 2 * 256 + 256 * 512 + 512 + 512 * 256 + 256);
  });

  it("times the n-gram model by what it multiplies, not by its table's rows", () => {
    const [ngram, , gru] = initialBuiltin(lmInput(), 3);
    // The GRU probe measured: 30 s, 3 of them to its first step.
    const s = state([
      started({ parallel: 2 }, { dataset: "text", objective: Metric.BITS_PER_BYTE }),
      { runId: RUN, trialId: "g", body: { case: "trialProposed", value: { hypothesis: "h", model: modelSpec(gru!.model), train: trainSpec(gru!.train) } } },
      evaluated("g", 2.3, 0.1, { seedSeconds: [30] }),
    ]);
    (s.trials.get("g")!.evaluated!.result!.seedResults[0]!).secondsToFirstStep = 3;
    const input = { ...lmInput(), state: s, params: paramsCounter(s, CORPUS), work: workCounter(s, CORPUS) };
    const work = input.work(ngram!.model)!;
    expect(work).toBe((input.params(ngram!.model) as number) - (1 << 17) * 32);
    // The same training of the n-gram model: its 27 s of training after the start-up scaled by the
    // square root of the two models' work, a 4.5M-parameter model costing less than the GRU's 250k.
    const predicted = predictedSeconds(input, { model: ngram!.model, train: gru!.train }, s.trials.get("g")!)!;
    expect(predicted).toBeCloseTo(3 + 27 * Math.sqrt(work / input.work(gru!.model)!), 6);
    expect(predicted).toBeLessThan(30);
  });

  it("moves the context within the row and the heads to counts the width divides", () => {
    const g = { model: initialBuiltin(lmInput(), 3).find((p) => p.model.name === "byte-transformer")!.model, train: { context: 128 } };
    const contexts = new Set<number | undefined>();
    const heads = new Set<number>();
    for (let seed = 0; seed < 16; seed++) {
      contexts.add(edit("context").apply(g, { ...env, rng: mulberry32(seed) })!.train.context);
      const layers = (edit("heads").apply(g, { ...env, rng: mulberry32(seed) })!.model as { layers: { type: string; heads?: number }[] }).layers;
      heads.add(layers.find((l) => l.type === "transformer_encoder")!.heads!);
    }
    // 256 is the whole row: the schema's default, spelt 0.
    expect(contexts).toEqual(new Set([64, 0]));
    expect(heads).toEqual(new Set([2, 8]));
    // No context edit for other tasks, and no label smoothing for a language model.
    expect(edit("context").apply(g, { ...env, info: FASHION, rng: mulberry32(0) })).toBeUndefined();
    expect(edit("label_smoothing").apply(g, { ...env, rng: mulberry32(0) })).toBeUndefined();
  });
});

describe("random crops (the augment edit)", () => {
  const edit = MUTATIONS.find((m) => m.name === "augment")!;
  const g = { model: { name: "m", layers: [{ type: "flatten" as const }] }, train: {} };
  const on = (info: DatasetInfo) => edit.apply(g, { info, device: "cpu", arguments: [], rng: mulberry32(0) });
  const DIGITS = create(DatasetInfoSchema, { name: "digits", inputShape: [1, 8, 8], numClasses: 10, inputDtype: "float32" });

  it("pads by the image's side, flips only what mirrors, and leaves tables alone", () => {
    expect(on(FASHION)!.train).toEqual({ augment: { crop_padding: 2, hflip: true } });
    expect(on(DIGITS)!.train).toEqual({ augment: { crop_padding: 1, hflip: false } });
    expect(on(create(DatasetInfoSchema, { name: "wine", inputShape: [13], numClasses: 3, inputDtype: "float32" }))).toBeUndefined();
    // The random baseline draws the same padding.
    const draws = Array.from({ length: 20 }, (_, i) => randomPolicy({ ...input([]), info: DIGITS, params: paramsCounter(input([]).state, DIGITS), rng: mulberry32(i) }, i)!.train);
    expect(new Set(draws.map((t) => t.augment?.crop_padding ?? 0))).toEqual(new Set([0, 1]));
  });
});

describe("test-time flip averaging (the tta edit)", () => {
  const edit = MUTATIONS.find((m) => m.name === "tta")!;
  const g = { model: { name: "m", layers: [{ type: "flatten" as const }] }, train: {} };
  const on = (info: DatasetInfo, device: "cpu" | "cuda") => edit.apply(g, { info, device, arguments: [], rng: mulberry32(0) });

  it("turns it on for mirrorable images on a GPU, once, and nowhere else", () => {
    expect(on(FASHION, "cuda")!.train).toEqual({ tta_hflip: true });
    expect(edit.apply(on(FASHION, "cuda")!, { info: FASHION, device: "cuda", arguments: [], rng: mulberry32(0) })).toBeUndefined();
    // A CPU pays a second pass over 6,000 validation images each epoch of a probe.
    expect(on(FASHION, "cpu")).toBeUndefined();
    // A mirrored digit is another symbol or none.
    expect(on(create(DatasetInfoSchema, { name: "mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32" }), "cuda")).toBeUndefined();
    expect(on(create(DatasetInfoSchema, { name: "wine", inputShape: [13], numClasses: 3, inputDtype: "float32" }), "cuda")).toBeUndefined();
  });
});

describe("a narrowed space (launch --space)", () => {
  const parsed = parseSpace({ families: ["vgg-cnn", "bn-cnn"], optimizer: { values: ["adamw"] }, lr: { low: 5e-4, high: 1.5e-3 }, label_smoothing: "default", batch_size: { values: [128, 256] } });
  if (!parsed.ok) throw new Error(parsed.error);
  const space = parsed.value;
  const narrowed = (events: EventInit[]): PlanInput => {
    const s = state([started({ parallel: 2, space: spaceMessage(space) }, { dataset: "fashion-mnist" }), ...events]);
    return { state: s, info: FASHION, rng: mulberry32(7), params: paramsCounter(s, FASHION), failedElsewhere: new Set() };
  };

  it("starts from its families only, with recipes moved into it", () => {
    const first = initialBuiltin(narrowed([]), 4);
    expect(first.length).toBeGreaterThan(0);
    for (const p of first) {
      expect(["vgg-cnn", "bn-cnn"]).toContain(p.model.name);
      expect(outsideSpace(space, p.train), p.hypothesis).toBeUndefined();
    }
  });

  it("never edits out of it, and its random draws stay in it", () => {
    const first = initialBuiltin(narrowed([]), 2);
    const events: EventInit[] = first.flatMap((p, i): EventInit[] => [
      { runId: RUN, trialId: `t${i}`, body: { case: "trialProposed", value: { surface: Surface.ARCHITECTURE, model: modelSpec(p.model), train: trainSpec(p.train) } } },
      timed(evaluated(`t${i}`, 0.85 + i / 100), 10),
      { runId: RUN, trialId: `t${i}`, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ]);
    const edits = Array.from({ length: 16 }, (_, i) => nextBuiltin({ ...narrowed(events), rng: mulberry32(i) }, 2 + i)).filter((p) => p !== undefined);
    expect(edits.length).toBeGreaterThan(8);
    for (const p of edits) expect(outsideSpace(space, p.train), p.hypothesis).toBeUndefined();
    // Edits of what the space pins are passed over, with the reason said.
    expect(edits.map((p) => p.mutation)).not.toContain("label_smoothing");
    expect(edits.map((p) => p.mutation)).not.toContain("optimizer");
    const draws = Array.from({ length: 12 }, (_, i) => randomPolicy({ ...narrowed([]), rng: mulberry32(100 + i) }, i)!);
    for (const p of draws) {
      expect(outsideSpace(space, p.train), p.hypothesis).toBeUndefined();
      expect(p.model.name).toMatch(/^(vgg-cnn|bn-cnn)/);
    }
  });
});

describe("when the last long training is due (promises.ts lastTrainingDueS)", () => {
  // A 120-s run: exploration's share ends at 40 s; a starting template judged at `judgedS`.
  const run = (judgedS: number) =>
    state([
      started({}, { timeBudgetS: 120 }),
      {
        runId: RUN,
        trialId: "t000",
        emittedAtMs: 2_000n,
        body: { case: "trialProposed", value: { hypothesis: "a starting template", mutation: Mutation.TEMPLATE, model: modelSpec({ name: "t", layers: [{ type: "flatten" }] }), train: trainSpec({}) } },
      },
      { ...evaluated("t000", 0.9), emittedAtMs: BigInt(1000 + judgedS * 1000 - 10) },
      { runId: RUN, trialId: "t000", emittedAtMs: BigInt(1000 + judgedS * 1000), body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ]);

  it("is exploration's share of the budget, or the later judgement of a starting template the planner waits for", () => {
    expect(lastTrainingDueS(run(20))).toBeCloseTo(40, 6);
    expect(lastTrainingDueS(run(47))).toBeCloseTo(47, 6);
  });
});
