/**
 * The built-in planner and the judge over a whole run, on a simulated GPU with a virtual
 * clock: what the planner proposes is "trained" by a model of an H200's timings (the
 * figures measured there, bench/HISTORY.md) and of Fashion-MNIST accuracy by model
 * size, data, epochs and augmentation, then judged by the real judge rules. Nothing
 * here measures a GPU: it checks that the planner spends a fast device's time as it
 * should (residual families, full-data probes, the last long training as long as the
 * time left allows) and never plans past the budget. The same loop on CPU timings
 * checks that the planner still starts small there.
 */
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { compileModel } from "../../core/compiler/compile.js";
import type { SearchDevice } from "../../core/defaults.js";
import { isCodeModel, type TrainConfig, type TrainConfigInput, type TrialModelInput } from "../../core/model-config.js";
import { mulberry32 } from "../../agents/planner/proposals.js";
import { initialBuiltin } from "../../agents/planner/policies/builtin.js";
import type { PlanInput, Proposal } from "../../agents/planner/types.js";
import { decide } from "../../agents/planner/decide.js";
import { judge } from "../../agents/judge/rules.js";
import { aggregate } from "../../gpu-runner/stats.js";
import { DatasetInfoSchema, EvalResultSchema, SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { Decision, EventSchema, GoalSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { runSettings } from "../../deploy/settings.js";
import { Surface } from "../../proto/gen/research/v1/common_pb.js";
import { applyToRunState, bestTrial, emptyRunState, type RunState } from "../../swarm/run-state.js";
import { rungOf } from "../../swarm/trial-state.js";
import { budgetPlan } from "../../swarm/budget.js";
import type { EventInit } from "../../bus/index.js";
import { SURFACE } from "../../core/enums.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";

const FASHION = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000 });
const RUN = "rsim";

interface Device {
  /** Seconds from a job reaching a warm worker to its first step. */
  startUpS: number;
  /** Seconds of one full-split epoch of a model of `params` parameters, alone on the device. */
  epochS(params: number): number;
  /** Seeds that share the device at full speed; more slow each down in proportion. */
  lanes: number;
  slots: number;
}

// H200 as measured (FIELD-NOTES, bench/HISTORY.md): ~1 s to a warm job's first step; the
// 61k-parameter reference CNN 0.28 s an epoch (bf16, batch 512), ResNet-9 (3.0M) 0.85 s, and
// three ResNet-9 seeds at once 2.54 s an epoch each: one such model fills the GPU.
const H200: Device = { startUpS: 1.0, epochS: (p) => 0.28 * Math.max(1, p / 61_000) ** 0.28, lanes: 1.2, slots: 8 };
// Two CPU cores, one thread a seed: a 170k-parameter VGG-style CNN took 886 s for 54k x 5
// epochs x 3 seeds on two slots, ~30 s an epoch a seed on one core.
const CPU2: Device = { startUpS: 0.3, epochS: (p) => 30 * (p / 170_000) ** 0.8, lanes: 2, slots: 2 };

const paramsOf = (model: TrialModelInput) => {
  if (isCodeModel(model)) throw new Error(`${model.class_name}: this simulation trains model_configs only`);
  const r = compileModel(model, { inputShape: [1, 28, 28], numClasses: 10 });
  if (!r.ok) throw new Error(r.error);
  return r.params;
};

/**
 * Fashion-MNIST validation accuracy of a recipe, made up but shaped like the measurements:
 * capacity up to a few million parameters, more passes over more data, and augmentation that
 * pays only in long trainings.
 */
function accuracy(params: number, train: TrainConfigInput, seed: number): number {
  const passes = ((train.subset || FASHION.nTrain) / FASHION.nTrain) * (train.epochs ?? 2);
  const capacity = 0.915 + 0.03 * Math.min(1, Math.max(0, Math.log10(params / 20_000) / 2));
  const aug = train.augment ?? {};
  const long = passes >= 15;
  const bonus = (aug.crop_padding ? (long ? 0.004 : -0.002) : 0) + (aug.cutout ? (long ? 0.005 : -0.004) : 0) + (aug.hflip ? 0.002 : 0);
  const noise = 0.002 * (mulberry32(seed * 7919 + Math.round(params))() - 0.5);
  return Math.min(0.985, capacity + bonus - 0.09 * passes ** -0.8 + noise);
}

interface Running {
  id: string;
  proposal: Proposal;
  params: number;
  seeds: number;
  startS: number;
  /** Seconds of training left per seed, at full speed (the device to itself). */
  workS: number;
  /** Seconds of one full-split epoch at full speed. */
  epochS: number;
  /** When train_seconds stops it, on the clock. */
  deadlineS: number;
}

/**
 * The device shared as processor sharing: every seed in flight trains at
 * min(1, lanes / seeds in flight) of its full speed, after a start-up of its own.
 */
function simulate(device: Device, kind: SearchDevice, budgetS: number) {
  const events: Event[] = [];
  let state: RunState = emptyRunState(RUN);
  let clockS = 0;
  // Any epoch but 0, which a run state takes for "not started".
  const nowMs = () => 1_700_000_000_000 + clockS * 1000;
  const emit = (e: EventInit) => {
    // Stamped on the simulated clock: the run's live time, and so its budget plan, follow it.
    const event = create(EventSchema, { emittedAtMs: BigInt(Math.round(nowMs())), ...e }) as Event;
    events.push(event);
    state = applyToRunState(state, event);
  };
  emit({ runId: RUN, body: { case: "runStarted", value: { goal: { dataset: "fashion-mnist", openEnded: true, timeBudgetS: budgetS }, settings: { maxTrials: 200, seeds: 3, patience: 10, parallel: kind === "cuda" ? 4 : 2, trialTimeBudgetS: runSettings(create(GoalSchema, { timeBudgetS: budgetS }), {}, "/tmp").trialTimeBudgetS, research: false } } } });
  const running: Running[] = [];
  const input = (index: number): PlanInput => ({
    state,
    info: FASHION,
    rng: mulberry32(index),
    params: (m) => paramsOf(m),
    failedElsewhere: new Set(),
    nowMs: nowMs(),
    slots: device.slots,
    device: kind,
  });
  const start = (index: number, p: Proposal) => {
    const id = `${RUN}-t${String(index).padStart(3, "0")}`;
    emit({ runId: RUN, trialId: id, body: { case: "trialProposed", value: { hypothesis: p.hypothesis, rationale: p.rationale, parentIds: p.parentIds, surface: p.surface ? SURFACE.value(p.surface) : Surface.ARCHITECTURE, model: modelSpec(p.model), train: trainSpec(p.train), index, rung: p.rung, seeds: p.seeds ?? 0, lastTraining: p.lastTraining ?? false } } });
    const params = paramsOf(p.model);
    const passes = ((p.train.subset || FASHION.nTrain) / FASHION.nTrain) * (p.train.epochs ?? 2);
    const epochS = device.epochS(params);
    const deadlineS = p.train.train_seconds ? clockS + device.startUpS + p.train.train_seconds : Infinity;
    running.push({ id, proposal: p, params, seeds: p.seeds || 3, startS: clockS, workS: epochS * passes, epochS, deadlineS });
  };
  initialBuiltin(input(0), state.settings!.parallel).forEach((p, i) => start(i, p));
  while (running.length) {
    // Advance to the next trial to finish at today's sharing.
    const inFlight = running.reduce((n, r) => n + r.seeds, 0);
    const rate = Math.min(1, device.lanes / inFlight);
    const endOf = (r: Running) => Math.min(r.workS / rate, r.deadlineS - clockS);
    const done = running.reduce((a, b) => (endOf(b) < endOf(a) ? b : a));
    const stepS = Math.max(0, endOf(done));
    clockS += stepS;
    for (const r of running) r.workS -= stepS * rate;
    running.splice(running.indexOf(done), 1);
    // What it trained: a training stopped by its time reached fewer passes than its epochs.
    const planned = ((done.proposal.train.subset || FASHION.nTrain) / FASHION.nTrain) * (done.proposal.train.epochs ?? 2);
    const reached = planned - Math.max(0, done.workS) / done.epochS;
    const trained = { ...done.proposal.train, subset: 0, epochs: Math.max(1, Math.round(reached * (done.proposal.train.subset || FASHION.nTrain) / FASHION.nTrain)) };
    const seconds = device.startUpS + clockS - done.startS;
    const seeds = Array.from({ length: done.seeds }, (_, seed) =>
      create(SeedResultSchema, { seed, seconds, secondsToFirstStep: device.startUpS, metrics: { val_accuracy: accuracy(done.params, done.proposal.train.train_seconds ? trained : done.proposal.train, seed), val_examples: FASHION.nVal }, epochsCompleted: trained.epochs }),
    );
    clockS += device.startUpS / 4; // start-ups overlap the other trials' training
    const result = create(EvalResultSchema, { aggregated: aggregate(seeds), seedResults: seeds, seconds, params: BigInt(done.params), numClasses: 10 });
    // A trial still training at the reserve is cancelled by the analyst: it would have no result.
    const cut = clockS > budgetS - budgetPlan(state, nowMs()).reserveS + 1;
    emit({ runId: RUN, trialId: done.id, body: { case: "trialEvaluated", value: cut ? { failure: { label: 5, message: "budget_overrun" } } : { result } } });
    const judged = judge(state, state.trials.get(done.id)!, nowMs());
    emit({ runId: RUN, trialId: done.id, body: { case: "trialJudged", value: judged } });
    if (judged.decision !== Decision.ITERATE) break;
    const index = state.settings!.parallel + state.trials.get(done.id)!.judgedPosition!;
    // As the planner's proposeAfter (agents/planner/main.ts) decides.
    const move = decide(input(index), index);
    if (move.kind === "nothing") expect(move.broken ?? []).toEqual([]);
    if (move.kind === "propose" || move.kind === "promote") start(index, move.proposal);
  }
  return { state, clockS, events };
}

export function timeline(state: RunState): string {
  return [...state.trials.values()].map((t) => {
    const tr = t.train ?? ({} as Partial<TrainConfig>);
    const r = t.evaluated?.result;
    return `${t.id}${t.proposed?.lastTraining ? "*" : ""} r${rungOf(t)} ${t.model?.name} ${tr.subset}x${tr.epochs}${tr.train_seconds ? `(${tr.train_seconds}s, ${r?.seedResults[0]?.epochsCompleted} done)` : ""} s${t.proposed?.seeds || 3} ${r ? `${(100 * r.aggregated.val_accuracy!.mean).toFixed(2)} ${r.seedResults[0]?.seconds.toFixed(1)}s` : t.evaluated?.failure?.message} ${t.judged?.reason?.slice(0, 80) ?? ""}`;
  }).join("\n");
}

const trials = (s: RunState) => [...s.trials.values()].filter((t) => t.evaluated?.result);
const trainOf = (t: { train?: TrainConfig }) => t.train!;

describe("the planner on a simulated H200", () => {
  const { state, clockS } = simulate(H200, "cuda", 300);
  if (process.env.SIM_DEBUG) console.log(timeline(state), clockS);
  const done = trials(state);
  const last = done.find((t) => t.proposed?.lastTraining)!;

  it("probes residual, GPU-sized families on the whole training split, in bf16 batches of 512", () => {
    const first = done.filter((t) => rungOf(t) === 0).slice(0, 4);
    expect(first[0]!.model!.name).toBe("resnet9");
    for (const t of first) expect(trainOf(t)).toMatchObject({ subset: 0, epochs: 3, batch_size: 512, amp: true, channels_last: true });
    expect(Number(first[0]!.evaluated!.result!.params)).toBeGreaterThan(2_000_000);
  });

  it("trains its best config for the time left once a third of the budget is spent, and ends within the budget", () => {
    expect(last).toBeDefined();
    expect(last.evaluated!.result!.seedResults.length).toBe(3);
    expect(trainOf(last).train_seconds).toBeGreaterThan(100);
    expect(last.evaluated!.result!.seedResults[0]!.epochsCompleted).toBeGreaterThanOrEqual(30);
    expect(trainOf(last).augment?.crop_padding).toBeGreaterThan(0);
    expect(clockS).toBeLessThanOrEqual(300);
    expect([...state.trials.values()].filter((t) => t.evaluated?.failure)).toEqual([]);
    // It became the run's best, and the run ended with it.
    expect(bestTrial(state)?.id).toBe(last.id);
    expect(last.judged?.decision).toBe(Decision.STOP);
  });

  it("explores first with several trials sharing the GPU, and starts nothing beside the last training", () => {
    const index = (id: string) => state.order.indexOf(id);
    expect(done.filter((t) => rungOf(t) === 0 && index(t.id) < index(last.id)).length).toBeGreaterThanOrEqual(10);
    expect(state.order[state.order.length - 1]).toBe(last.id);
  });
});

describe("the same planner on two simulated CPU cores", () => {
  const { state, clockS } = simulate(CPU2, "cpu", 1800);
  if (process.env.SIM_DEBUG) console.log(timeline(state), clockS);
  const done = trials(state);

  it("starts small, on a slice of the split, in batches of 128, asking for mixed precision (the runner's bf16 where the CPU has it)", () => {
    const first = done.filter((t) => rungOf(t) === 0).slice(0, 2);
    for (const t of first) {
      expect(trainOf(t)).toMatchObject({ subset: 10_000, epochs: 3, batch_size: 128, amp: true });
      expect(Number(t.evaluated!.result!.params)).toBeLessThan(400_000);
    }
    expect(clockS).toBeLessThanOrEqual(1800);
  });
});
