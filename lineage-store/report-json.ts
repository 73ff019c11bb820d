/**
 * The end-of-run report as data: report.json's document, built from the folded RunState only (a
 * trial's row, the best, the timeline, the front, the limits; what the run learned and what is
 * next from report-findings.ts, the model's cost and weights from report-model.ts), and the
 * formats both report.json and report.md use. report-markdown.ts writes the page from it; report.ts both files.
 */
import { adoptedConcepts, blocksOf } from "../core/brief.js";
import { inferenceSpec } from "./inference-spec.js";
import { describeSpace, spaceOf } from "../core/space.js";
import { lastEpochsOf } from "../core/defaults.js";
import { bestRule, whyBest, type HypothesisOutcome } from "../core/ranking.js";
import { editFinding } from "../swarm/findings.js";
import { objective, type Objective } from "../core/objective.js";
import { FRONT_RULE, frontOf, latencyOf, limitLatencyMs, pointOf, tradeOffsOf } from "../swarm/front.js";
import { nondominatedFronts } from "../core/pareto.js";
import { bestTrial, pastPriorOf, rankedTrials, type RunState } from "../swarm/run-state.js";
import { failureLabelOf, isPromotion, paramsOf, scoreOf, standing, surfaceOf, trialFailure, valMetricOf, type TrialState } from "../swarm/trial-state.js";
import { labelName } from "../core/failure.js";
import { int, jobsText } from "../core/format.js";
import { protoJson } from "../core/proto-json.js";
import { DECISION, INTERVENTION_KIND, RUN_STATUS, VERDICT, type DecisionName, type VerdictName } from "../core/enums.js";
import { Decision, RunnerJobsSchema, Verdict, type RunFinished } from "../proto/gen/research/v1/events_pb.js";
import type { EvalResult, MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import type { ScorePoint } from "./plots.js";
import type { WeightsExport } from "./weights.js";
import { baselineComparison } from "./baseline.js";
import { classesJson, nextSteps } from "./report-findings.js";
import { inferenceJson, weightsJson } from "./report-model.js";

/** A judgement without a verdict accepted nothing. */
export function verdictName(v: Verdict): VerdictName {
  return VERDICT.name(v) ?? "reject";
}

/** A judgement without a decision let the run go on. */
export function decisionName(d: Decision): DecisionName {
  return DECISION.name(d) ?? "iterate";
}

/** When each trial was judged, from the events or the registry; the report's timeline needs it. */
export interface ReportTiming {
  judgedAtMs: ReadonlyMap<string, number>;
}

export const PLOT_FILES = {
  scores: "plots/scores.svg",
  learningCurves: "plots/learning_curves.svg",
  failures: "plots/failures.svg",
} as const;

/** A Pareto goal's front against its first cost: written only for such a goal. */
export const FRONT_PLOT = "plots/front.svg";

/** A run time as the report and `research-agent runs` write it. */
export function duration(s: number): string {
  if (s < 90) return `${s.toFixed(1)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(2)} h`;
}

function ciPair(s: MetricStats): [number, number] | null {
  return s.ci95.length === 2 ? [s.ci95[0]!, s.ci95[1]!] : null;
}

export interface StatsJson {
  mean: number;
  std: number;
  ci_95: [number, number] | null;
  min: number;
  max: number;
  n: number;
}

/** Text cut to `max` characters at a word's end (a word longer than that is cut where it must be). */
export function short(text: string, max = 64): string {
  const t = text.replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

export function statsJson(s: MetricStats | undefined): StatsJson | null {
  return s ? { mean: s.mean, std: s.std, ci_95: ciPair(s), min: s.min, max: s.max, n: s.n } : null;
}

// ---------- the report's parts, as data ----------

/**
 * The briefs' suggestions a trial's configs hold, by the planner's one rule (core/brief.ts
 * adoptedConcepts), read again from the configs: a run recorded under an older rule is reported
 * under today's.
 */
function adoptedOf(state: RunState, t: TrialState): string[] {
  if (!t.model || !t.train) return t.proposed?.adoptedConcepts ?? [];
  const parent = state.trials.get(t.proposed?.parentIds[0] ?? "");
  return adoptedConcepts(state.briefs, blocksOf(t.model, t.train), parent && blocksOf(parent.model, parent.train)).map((a) => a.name);
}

function trialRow(state: RunState, t: TrialState, position: number) {
  const acc = valMetricOf(t);
  const f = trialFailure(t);
  return {
    position,
    index: t.proposed?.index ?? position - 1,
    trial_id: t.id,
    surface: surfaceOf(t),
    hypothesis: t.proposed?.hypothesis ?? "",
    parents: t.proposed?.parentIds ?? [],
    proposer: t.proposed?.proposer ?? "",
    adopted_concepts: adoptedOf(state, t),
    // Past trials (of other runs) whose configs it starts from: a warm start, evaluated here.
    informed_by: t.proposed?.informedBy ?? [],
    // Each one's weight (1/2 x exp(-distance of its dataset)), in the same order; empty in runs recorded before weights were.
    informed_weights: t.proposed?.informedWeights ?? [],
    // The kept weights its seeds started from (a training continued from a past run's, or from this run's own); null: its model's initialisation.
    init_weights: t.proposed?.initWeights ? { run_id: t.proposed.initWeights.runId, trial_id: t.proposed.initWeights.trialId } : null,
    params: paramsOf(t) ?? null,
    // Milliseconds per example at batch 1 on the device it ran on (swarm/front.ts latencyOf); null: not timed.
    latency_ms: latencyOf(t)?.mean ?? null,
    // The run's validation metric; report.json names it by its key (val_accuracy, val_rmse: reportText).
    val: statsJson(acc),
    num_seeds: t.evaluated?.result?.numSeeds ?? null,
    // Seeds its runner trained in one process (gpu-runner --seeds): 1 a job each; null before runners said.
    seeds_together: Math.max(0, ...(t.evaluated?.result?.seedResults ?? []).map((r) => r.seedsTogether)) || null,
    // Why a runner that trains seeds together trained these apart (a model vmap cannot run), or null.
    seeds_apart: t.evaluated?.result?.seedsApart || null,
    // What the interval is made of, with num_seeds (core/ranking.ts intervalBasis).
    val_examples: standing(t)?.valExamples ?? null,
    score: scoreOf(t) ?? null,
    verdict: t.judged ? verdictName(t.judged.verdict) : null,
    decision: t.judged ? decisionName(t.judged.decision) : null,
    reason: t.judged?.reason ?? "",
    gain: t.judged?.gain ?? null,
    failure_label: f ? labelName(f.label) : null,
    failure_message: f?.message ?? null,
    eval_seconds: t.evaluated ? t.evaluated.evalSeconds || t.evaluated.result?.seconds || null : null,
    judged_position: t.judgedPosition ?? null,
    // The same config trained again on more data, epochs or seeds: no hypothesis of its own, and its change no edit's gain.
    promotion: isPromotion(t),
    hypothesis_outcome: null as ReturnType<typeof outcomeOf>,
    best: false,
  };
}

/**
 * Whether the trial's hypothesis held (swarm/findings.ts editFinding): `trial_ids` is the pair
 * compared, the edit's config and its parent's at the highest fidelity both reached;
 * `paired_examples` the validation examples they were compared on example by example (0: by
 * their intervals alone). None for a promotion, a trial without an evaluated parent, or one
 * trained at another fidelity than its parent.
 */
function outcomeOf(state: RunState, t: TrialState): { outcome: HypothesisOutcome; parent_id: string; trial_ids: [string, string]; change: number; ci_95: [number, number]; detectable: number; paired_examples: number } | null {
  const f = editFinding(state, t);
  if (!f) return null;
  return { outcome: f.outcome, parent_id: f.parent.id, trial_ids: [f.pair[0].id, f.pair[1].id], change: f.change, ci_95: f.ci95, detectable: f.detectable, paired_examples: f.pairedExamples };
}

/** What a trial is, for people: "vgg-cnn, 170,218 parameters, adam lr 0.002, cosine schedule, batch 128, 2 epochs on 12,000 examples". */
function whatItIs(t: TrialState): string {
  const m = t.model;
  const r = t.train;
  const params = paramsOf(t);
  const parts = [
    m ? ("class_name" in m && m.class_name ? `${m.class_name} (your code)` : m.name || "model") : t.assembled?.className || "model",
    params !== undefined ? `${int(params)} parameters` : "",
    r ? `${r.optimizer} lr ${r.lr}` : "",
    r && r.schedule !== "none" ? `${r.schedule} schedule` : "",
    r ? `batch ${r.batch_size}` : "",
    r?.tta_hflip ? "flip-averaged predictions" : "",
    r ? `${epochsOf(t, r)} on ${r.subset ? `${int(r.subset)} examples` : "the whole training split"}` : "",
    keptOf(t),
  ];
  return parts.filter(Boolean).join(", ");
}

/** "3 epochs"; a training the clock stopped (its epochs an upper bound): "16 epochs in 737 s", as its seeds trained. */
function epochsOf(t: TrialState, r: NonNullable<TrialState["train"]>): string {
  const plural = (n: number | string) => `${n} epoch${n === 1 ? "" : "s"}`;
  if (!(r.train_seconds > 0)) return plural(r.epochs);
  const done = (t.evaluated?.result?.seedResults ?? []).map((s) => s.epochsCompleted).filter((e) => e > 0);
  const lo = Math.min(...done);
  const hi = Math.max(...done);
  return `${done.length ? plural(lo === hi ? lo : `${lo}-${hi}`) : `up to ${plural(r.epochs)}`} in ${duration(r.train_seconds)}`;
}

/** "its seeds' best validation epochs kept (81-120)", when a seed ended at an earlier epoch than its last (trainer.py _BestEpoch). */
function keptOf(t: TrialState): string {
  const seeds = (t.evaluated?.result?.seedResults ?? []).filter((s) => s.keptEpoch > 0);
  if (!seeds.some((s) => s.keptEpoch < s.epochsCompleted)) return "";
  const kept = seeds.map((s) => s.keptEpoch);
  const [lo, hi] = [Math.min(...kept), Math.max(...kept)];
  return `its seeds' best validation epochs kept (${lo === hi ? lo : `${lo}-${hi}`})`;
}

/** The trial's first-parent line back to where the run started, oldest first, each step with how it was made. */
function pathTo(state: RunState, t: TrialState): { trial_id: string; step: string }[] {
  const path: { trial_id: string; step: string }[] = [];
  const seen = new Set<string>();
  for (let at: TrialState | undefined = t; at && !seen.has(at.id); at = state.trials.get(at.proposed?.parentIds[0] ?? "")) {
    seen.add(at.id);
    const step = at.proposed?.lastTraining
      ? "the run's last long training"
      : isPromotion(at)
        ? "promotion"
        : at.proposed?.parentIds.length
          ? short(at.proposed.hypothesis, 80)
          : `start: ${short(at.proposed?.hypothesis ?? "", 80)}`;
    path.unshift({ trial_id: at.id, step });
  }
  return path;
}

export type TrialRow = ReturnType<typeof trialRow>;

export function countFailures(rows: TrialRow[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of rows) if (r.failure_label) counts[r.failure_label] = (counts[r.failure_label] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
}

function surfaceStats(rows: TrialRow[], o: Objective) {
  const by = new Map<string, TrialRow[]>();
  for (const r of rows) by.set(r.surface || "(none)", [...(by.get(r.surface || "(none)") ?? []), r]);
  return [...by.entries()].map(([surface, rs]) => {
    // Gain only means something for an edit that produced a score: a promotion's change is more data, epochs or seeds.
    const gains = rs.filter((r) => r.verdict && r.val && !r.promotion).map((r) => r.gain ?? 0);
    const outcomes = rs.flatMap((r) => (r.hypothesis_outcome ? [r.hypothesis_outcome.outcome] : []));
    const means = rs.flatMap((r) => (r.val ? [r.val.mean] : []));
    return {
      surface,
      trials: rs.length,
      judged: rs.filter((r) => r.verdict).length,
      accepted: rs.filter((r) => r.verdict === "accept").length,
      promotions: rs.filter((r) => r.promotion).length,
      supported: outcomes.filter((x) => x === "supported").length,
      refuted: outcomes.filter((x) => x === "refuted").length,
      failed: rs.filter((r) => r.failure_label).length,
      mean_gain: gains.length ? gains.reduce((a, b) => a + b, 0) / gains.length : null,
      best_val: means.length ? (o.higherIsBetter ? Math.max(...means) : Math.min(...means)) : null,
    };
  });
}

export function timeline(state: RunState, finished: RunFinished, timing: ReportTiming | undefined) {
  const judged = [...state.trials.values()].filter((t) => t.judged).sort((a, b) => a.judgedPosition! - b.judgedPosition!);
  const at = (t: TrialState | undefined) => {
    if (!t) return null;
    const ms = timing?.judgedAtMs.get(t.id);
    return {
      trial_id: t.id,
      trials_judged: t.judgedPosition! + 1,
      seconds: ms !== undefined && state.startedAtMs > 0 ? (ms - state.startedAtMs) / 1000 : null,
    };
  };
  return {
    first_accepted: at(judged.find((t) => t.judged!.verdict === Verdict.ACCEPT)),
    goal_reached: at(judged.find((t) => t.judged!.decision === Decision.GOAL_ACHIEVED)),
    total_seconds: finished.seconds,
  };
}

function testStats(r: EvalResult | undefined) {
  if (!r) return null;
  const metrics = Object.fromEntries(
    Object.entries(r.aggregated)
      .filter(([k]) => k.startsWith("test_") || k.startsWith("ensemble_"))
      .map(([k, s]) => [k, statsJson(s)]),
  );
  // A language model's text, from the seed the evaluation names best.
  const sample = r.seedResults.find((x) => x.seed === r.bestSeed)?.sample || null;
  return { num_seeds: r.numSeeds, metrics, sample, sample_seed: sample ? r.bestSeed : null, inference: inferenceJson(r) };
}

function briefUse(state: RunState, rows: TrialRow[]) {
  const adoptedBy = new Map<string, string[]>();
  for (const r of rows) for (const c of r.adopted_concepts) adoptedBy.set(c, [...(adoptedBy.get(c) ?? []), r.trial_id]);
  return {
    briefs: state.briefs.map((b) => ({
      title: b.summary_title,
      insights: b.insights,
      suggestions: b.architectural_suggestions.map((s) => ({ name: s.name, buildable: s.buildable ?? null, adopted_by: adoptedBy.get(s.name) ?? [] })),
      sources: b.sources,
    })),
    adopted_concepts: Object.fromEntries(adoptedBy),
  };
}

/** Each resume at the run's live time then (the downtime before it, and before earlier ones, not counted). */
function resumesOf(state: RunState) {
  let down = 0;
  return state.resumes.map((r) => {
    down += r.downtimeS;
    return { at_s: (r.atMs - state.startedAtMs) / 1000 - down, downtime_s: r.downtimeS, time_budget_s: r.timeBudgetS || null };
  });
}

/** The rule's sentence for the run's best, against the next trial by the same rule. */
function whyBestOf(state: RunState, best: TrialState): string | null {
  const ranked = rankedTrials(state);
  const own = standing(best);
  if (!own) return null;
  const next = ranked.find((t) => t !== best);
  const other = next && standing(next);
  return whyBest({ id: best.id, standing: own }, next && other ? { id: next.id, standing: other } : undefined, ranked.length, state.objective);
}

/** The run's best: the one it ended with, else the rule's pick so far (a live run). */
export function chosenBest(state: RunState, finished: RunFinished | undefined): TrialState | undefined {
  return (finished?.bestTrialId && state.trials.get(finished.bestTrialId)) || bestTrial(state);
}

export function scorePoints(rows: TrialRow[]): ScorePoint[] {
  return rows.map((r) => ({
    trialId: r.trial_id,
    mean: r.val?.mean,
    ci95: r.val?.ci_95 ?? undefined,
    accepted: r.verdict === "accept",
    best: r.best,
    failure: r.failure_label ?? undefined,
  }));
}

export function rowsOf(state: RunState, best: TrialState | undefined): TrialRow[] {
  return state.order.map((id, k) => {
    const t = state.trials.get(id)!;
    return { ...trialRow(state, t, k + 1), hypothesis_outcome: outcomeOf(state, t), best: id === best?.id };
  });
}

/** Tokens, latency, cost and outcomes of LLM calls, per role. */
function llmUse(state: RunState) {
  const roles = new Map<string, { calls: number; requests: number; prompt_tokens: number; completion_tokens: number; latency_ms: number; cost_usd: number; repaired: number; fallbacks: number }>();
  for (const c of state.llmCalls) {
    const r = roles.get(c.role) ?? { calls: 0, requests: 0, prompt_tokens: 0, completion_tokens: 0, latency_ms: 0, cost_usd: 0, repaired: 0, fallbacks: 0 };
    r.calls++;
    r.requests += c.requests;
    r.prompt_tokens += c.promptTokens;
    r.completion_tokens += c.completionTokens;
    r.latency_ms += c.latencyMs;
    r.cost_usd += c.costUsd;
    if (c.outcome === "repaired") r.repaired++;
    if (c.outcome === "fallback") r.fallbacks++;
    roles.set(c.role, r);
  }
  return {
    per_role: Object.fromEntries(roles),
    fallbacks: state.llmCalls.filter((c) => c.outcome === "fallback").map((c) => ({ role: c.role, purpose: c.purpose, error: c.error })),
  };
}

/** What people did to the run, with the trial each queued proposal became. */
function interventionsOf(state: RunState) {
  const cancelled = new Map([...state.cancelled].map(([trialId, v]) => [v.interventionId, trialId]));
  return state.interventions.map((v) => ({
    kind: INTERVENTION_KIND.name(v.kind) ?? "",
    who: v.who,
    reason: v.reason,
    trial_id: cancelled.get(v.interventionId) ?? null,
    hypothesis: v.hypothesis || null,
    taken_by: state.proposalTrials.get(v.interventionId) ?? null,
  }));
}

export function reportJson(state: RunState, finished: RunFinished, rows: TrialRow[], best: TrialState | undefined, timing: ReportTiming | undefined, weights: WeightsExport | undefined) {
  const g = state.goal;
  const s = state.settings;
  const bestRow = rows.find((r) => r.best);
  return {
    run_id: state.runId,
    goal: g
      ? {
          raw_text: g.rawText, description: g.description, dataset: g.dataset, metric: objective(g.objective).key, open_ended: g.openEnded,
          target: (!g.openEnded && g.target) || null, max_params: Number(g.maxParams) || null, time_budget_s: g.timeBudgetS || null,
          trade_offs: tradeOffsOf(state), max_latency_ms: g.maxLatencyMs || null,
        }
      : null,
    outcome: {
      status: RUN_STATUS.name(finished.status) ?? "",
      reason: finished.reason,
      trials: finished.trials || state.judgedCount,
      seconds: finished.seconds,
      best_trial: bestRow && best ? { ...bestRow, what: whatItIs(best), flip_averaged: !!best.train?.tta_hflip, path: pathTo(state, best), test: testStats(finished.testResult), weights: weightsJson(weights, inferenceSpec(state, best)), classes: classesJson(best) } : null,
      best_trial_id: best?.id ?? null,
      test_skipped: finished.testSkipped || null,
      resumes: resumesOf(state),
      runner_jobs: state.runnerJobs ? { ...protoJson(RunnerJobsSchema, state.runnerJobs), text: jobsText(state.runnerJobs) } : null,
      best_rule: bestRule(state.objective),
      why_best: best ? whyBestOf(state, best) : null,
    },
    next_steps: nextSteps(state, finished, rows, best, weights),
    baseline: baselineComparison(state, best, finished.testResult),
    trials: rows,
    failures: countFailures(rows),
    surfaces: surfaceStats(rows, state.objective),
    timeline: timeline(state, finished, timing),
    research: briefUse(state, rows),
    front: frontJson(state, finished),
    limits: limitsJson(state, best),
    // Past runs' results in the planner's surrogate as prior observations (null: none).
    past_prior: pastPriorOf(state) ?? null,
    llm: llmUse(state),
    interventions: interventionsOf(state),
    settings: s
      ? {
          max_trials: s.maxTrials, seeds: s.seeds, parallel: s.parallel, planner: s.planner, patience: s.patience, subset: s.subset,
          epochs: s.epochs, last_epochs: lastEpochsOf(s), trial_time_budget_s: s.trialTimeBudgetS, rng_seed: s.rngSeed, workspace: s.workspace, research: s.research,
          llm: s.llm || "none", warm_start: !s.noWarmStart, warm_start_from: s.warmStartFrom,
        }
      : null,
    // What a person narrowed the search to (launch --space), one phrase per dimension; [] for the built-in space.
    search_space: describeSpace(spaceOf(s?.space)),
    plots: PLOT_FILES,
  };
}

/** A Pareto goal's front by its rule (swarm/front.ts), each trial's objectives with their intervals; null for any other goal. */
export function frontJson(state: RunState, finished?: RunFinished) {
  const f = frontOf(state);
  if (!f) return null;
  const long = [...state.trials.values()].filter((t) => t.proposed?.lastTraining);
  // The claims' own front: the long trainings no other long training dominates (FRONT_RULE's dominance, on validation).
  const longPoints = long.flatMap((t) => pointOf(state, t) ?? []);
  const onFront = new Set((nondominatedFronts(longPoints, f.axes)[0] ?? []).map((p) => p.id));
  // Each one's one-time test evaluation: the best's is the run's test result, the others' the front's.
  const testOf = (t: TrialState) => (t.id === finished?.bestTrialId ? finished.testResult : finished?.frontTests.find((x) => x.trialId === t.id)?.result);
  return {
    rule: FRONT_RULE,
    axes: f.axes.map((a) => ({ name: a.name, higher_is_better: a.higherIsBetter })),
    trials: f.trials.map(({ t, p, crowding }) => ({
      trial_id: t.id,
      values: p.values.map((v) => ({ mean: v.mean, low: v.low, high: v.high })),
      // NSGA-II's crowding distance on the front; null for its extremes (infinite).
      crowding: Number.isFinite(crowding) ? crowding : null,
    })),
    knee: f.knee?.id ?? null,
    // The front's trials trained again on the full split with the run's seeds (the run's last long training).
    trained_long: long.map((t) => {
      const test = testOf(t);
      return {
        trial_id: t.id,
        from: t.proposed!.parentIds[0] ?? "",
        val: statsJson(valMetricOf(t)),
        test: statsJson(test?.aggregated[`test_${state.objective.metric}`]),
        params: paramsOf(t) ?? null,
        latency_ms: latencyOf(t)?.mean ?? null,
        on_front: onFront.has(t.id),
      };
    }),
    plot: FRONT_PLOT,
  };
}

/**
 * What the goal's latency limit did: the trials timed within it, those the judge labelled
 * over_limit (never accepted), and the best, which is therefore the best within every limit.
 * null for a goal without a latency limit.
 */
export function limitsJson(state: RunState, best: TrialState | undefined) {
  const limit = state.goal?.maxLatencyMs ?? 0;
  if (!(limit > 0)) return null;
  const trials = state.order.flatMap((id) => state.trials.get(id) ?? []);
  return {
    max_latency_ms: limit,
    max_params: Number(state.goal?.maxParams ?? 0n) || null,
    // A trial the judge labelled over_limit stays over, even if a later, quieter timing of its model is within.
    within: trials.filter((t) => failureLabelOf(t) !== "over_limit" && (limitLatencyMs(state, t) ?? Infinity) <= limit).map((t) => t.id),
    over: trials.filter((t) => failureLabelOf(t) === "over_limit").map((t) => t.id),
    best_within: best?.id ?? null,
    // The latency the limit held the best to (limitLatencyMs): below its own seeds' median when
    // those were timed beside seeds still training, as a last long training's are.
    best_latency_ms: best ? (limitLatencyMs(state, best) ?? null) : null,
  };
}

/** report.json's document. */
export type ReportJson = ReturnType<typeof reportJson>;

/**
 * report.json's text: the run's metric named by its key wherever a row holds it (`val_rmse`, and
 * a surface's `best_val_rmse`), as the dashboard's API names it; a bits-per-byte or RMSE run's
 * numbers are never called accuracy.
 */
export function reportText(j: ReportJson, o: Objective): string {
  const row = <R extends { val: unknown }>({ val, ...rest }: R) => ({ ...rest, [o.key]: val });
  const best = j.outcome.best_trial;
  return `${JSON.stringify(
    {
      ...j,
      outcome: { ...j.outcome, best_trial: best && row(best) },
      trials: j.trials.map(row),
      surfaces: j.surfaces.map(({ best_val, ...rest }) => ({ ...rest, [`best_${o.key}`]: best_val })),
    },
    null,
    2,
  )}\n`;
}
