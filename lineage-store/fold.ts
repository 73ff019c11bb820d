import { toJsonString } from "@bufbuild/protobuf";
import { labelName } from "../core/failure.js";
import { Mutation, type Failure } from "../proto/gen/research/v1/common_pb.js";
import { isRecord, parseJson } from "../core/json.js";
import type { RunState } from "../swarm/run-state.js";
import { failureLabelOf, paramsOf, surfaceOf, trialFailureAt, trialStage, trialStatus, valMetricOf, type TrialState } from "../swarm/trial-state.js";
import { DECISION, GOAL_STATUS, INTERVENTION_KIND, RUN_STATUS, SURFACE, VERDICT } from "../core/enums.js";
import { AnalysisSchema, GoalSchema, RunSettingsSchema, type Event } from "../proto/gen/research/v1/events_pb.js";
import { DatasetInfoSchema, EvalResultSchema } from "../proto/gen/research/v1/runner_pb.js";
import type { BriefRow, RunRow, TrialRow, TrialStage } from "./schema.js";
import { intervalBasis, standingOf } from "../core/ranking.js";
import { int, jobsText } from "../core/format.js";
import { ACCURACY, formatMetric, objective, type Objective } from "../core/objective.js";
import { briefSent, modelSent, trainSent } from "../core/config-wire.js";

/**
 * Rows as projections of the run's fold (swarm/run-state.ts): the store folds
 * no events of its own, so a row says what the agents, the report and the
 * dashboard say. The fold reads which stages are in, not the order they came
 * in, so a late or repeated event gives the same row.
 */

type BodyCase = NonNullable<Event["body"]["case"]>;

/** trialProposed -> trial_proposed; events without a body are stored as "empty". */
export function eventKind(e: Event): string {
  return e.body.case ? e.body.case.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : "empty";
}

export const TRIAL_EVENT_STAGE: Partial<Record<BodyCase, TrialStage>> = {
  trialProposed: "proposed",
  trialAssembled: "assembled",
  trialEvaluated: "evaluated",
  trialJudged: "judged",
};

/** Kinds that change a run row (trial_judged carries the run's best trial and trial count). */
export const RUN_EVENTS: ReadonlySet<BodyCase> = new Set(["runStarted", "trialJudged", "runFinished"]);

/** Equal timestamps are common (the judge emits trial_judged and run_finished together); pipeline order breaks ties. */
export const KIND_ORDER: readonly string[] = [
  "run_started", "brief_ready", "trial_proposed", "trial_assembled", "trial_progress",
  "trial_evaluated", "trial_judged", "run_intervention", "run_finished", "empty",
];

const ms = (e: Event) => Number(e.emittedAtMs);

/** A config's column: its JSON, "" when none was sent. */
const asText = (v: unknown) => (v === undefined ? "" : JSON.stringify(v));

/** The evaluation's statistics, or the judge's copy of them when the evaluation is not in. */
function accuracyColumns(t: TrialState): Pick<TrialRow, "val_accuracy" | "std" | "ci_low" | "ci_high"> {
  const acc = valMetricOf(t);
  if (acc) return { val_accuracy: acc.mean, std: acc.std, ci_low: acc.ci95[0] ?? null, ci_high: acc.ci95[1] ?? null };
  const j = t.judged;
  if (j && j.score > 0) return { val_accuracy: j.score, std: null, ci_low: j.ciLow, ci_high: j.ciHigh };
  return { val_accuracy: null, std: null, ci_low: null, ci_high: null };
}

export function trialRow(runId: string, t: TrialState): TrialRow {
  const { proposed: p, assembled: a, evaluated: ev, judged: j } = t;
  const result = ev?.result;
  const summary = a?.summary && a.summary.totalParams > 0n ? a.summary : undefined;
  const failed = trialFailureAt(t);
  return {
    trial_id: t.id, run_id: runId, index: p?.index ?? 0, status: trialStatus(t), stage: trialStage(t), surface: surfaceOf(t),
    hypothesis: p?.hypothesis ?? "", rationale: p?.rationale ?? "", parent_ids: [...(p?.parentIds ?? [])],
    adopted_concepts: [...(p?.adoptedConcepts ?? [])], proposer: p?.proposer ?? "", model_config_json: asText(p && modelSent(p)),
    train_config_json: asText(p && trainSent(p)),
    code: a?.code ?? "", class_name: a?.className ?? "", diff: a?.diff ?? "",
    params: paramsOf(t) ?? null, flops: summary ? Number(summary.flops) : null,
    ...accuracyColumns(t),
    seeds: result ? result.numSeeds : null, goal_status: result ? (GOAL_STATUS.name(result.goalStatus) ?? "") : "",
    failure_label: failureLabelOf(t) ?? "", failure_message: failed?.failure.message ?? "",
    failure_stage: failed?.stage ?? "",
    verdict: j ? (VERDICT.name(j.verdict) ?? "") : "", decision: j ? (DECISION.name(j.decision) ?? "") : "",
    reason: j?.reason ?? "", gain: j ? j.gain : null,
    analysis_json: ev?.analysis ? toJsonString(AnalysisSchema, ev.analysis) : "",
    eval_seconds: ev ? ev.evalSeconds : null,
    result_json: result ? toJsonString(EvalResultSchema, result) : "",
    created_at: t.firstAtMs ?? 0, updated_at: t.lastAtMs ?? 0,
  };
}

/**
 * The run's best trial: the one run_finished named, else the one the latest
 * judgement named (each trial_judged carries the run's best so far).
 */
function bestTrialId(state: RunState): string {
  if (state.runFinished?.bestTrialId) return state.runFinished.bestTrialId;
  let latest: TrialState | undefined;
  for (const t of state.trials.values()) {
    if (t.judged?.bestTrialId && (!latest || t.judgedPosition! > latest.judgedPosition!)) latest = t;
  }
  return latest?.judged?.bestTrialId ?? "";
}

export function runRow(state: RunState): RunRow {
  const { goal: g, settings, runFinished: f } = state;
  const best = bestTrialId(state);
  const bestTrial = state.trials.get(best);
  let trials = f?.trials ?? 0;
  for (const t of state.trials.values()) trials = Math.max(trials, t.judged?.trialsDone ?? 0);
  return {
    run_id: state.runId, goal: g?.rawText ?? "", dataset: g?.dataset ?? "", metric: g ? objective(g.objective).key : "", target: g ? g.target : null,
    max_params: g && g.maxParams > 0n ? Number(g.maxParams) : null, goal_json: g ? toJsonString(GoalSchema, g) : "",
    settings_json: settings ? toJsonString(RunSettingsSchema, settings) : "",
    status: f ? (RUN_STATUS.name(f.status) ?? "") : "running",
    started_at: state.startedAtMs || null, finished_at: f ? state.finishedAtMs : null,
    best_trial_id: best, best_score: bestTrial ? accuracyColumns(bestTrial).val_accuracy : null, trials,
    reason: f?.reason ?? "", report_path: f?.reportPath ?? "", registry_path: f?.registryPath ?? "",
    test_result_json: f?.testResult ? toJsonString(EvalResultSchema, f.testResult) : "",
    dataset_json: state.dataset ? toJsonString(DatasetInfoSchema, state.dataset) : "",
    updated_at: state.lastEventMs,
  };
}

/** A brief's title as its event carries it; undefined when an old event's text has none. */
function briefTitle(brief: unknown): string | undefined {
  return isRecord(brief) && typeof brief.summary_title === "string" ? brief.summary_title : undefined;
}

export function briefRow(e: Event): BriefRow | undefined {
  if (e.body.case !== "briefReady") return undefined;
  const b = e.body.value;
  const brief = briefSent(b);
  return {
    brief_id: b.briefId, run_id: e.runId, query: b.query, title: briefTitle(brief) ?? "", brief_json: asText(brief), author: b.author,
    created_at: ms(e),
  };
}

/** What a trial is "about": the text its vector is made from. */
export function trialEmbedText(t: TrialRow): string {
  const parts = [
    t.hypothesis,
    t.surface && `surface ${t.surface}`,
    describeConfig(t.model_config_json),
    describeConfig(t.train_config_json),
    t.failure_label && `failed ${t.failure_label.replaceAll("_", " ")}`,
  ];
  return parts.filter(Boolean).join(". ");
}

export function runEmbedText(r: RunRow): string {
  return [r.goal, r.dataset && `dataset ${r.dataset}`].filter(Boolean).join(". ");
}

export function briefEmbedText(b: BriefRow): string {
  const parsed = parseJson(b.brief_json);
  const words: string[] = [b.query, b.title];
  if (isRecord(parsed)) collectStrings(parsed.insights, words);
  if (isRecord(parsed)) collectStrings(parsed.architectural_suggestions, words);
  return words.filter(Boolean).join(". ").slice(0, 4000);
}

const MAX_CONFIG_WORDS = 40;

/**
 * A config reduced to the words that say what kind of model or recipe it is: keys, string
 * values, and keys of true flags. Numbers are left out (hashed digits only add noise) and
 * false flags too ("batchnorm": false must not look like a batchnorm trial). Repeated
 * words count once, so a long layer list cannot drown the hypothesis.
 */
export function describeConfig(json: string): string {
  if (!json) return "";
  const parsed = parseJson(json);
  if (parsed === undefined) return json.slice(0, 200);
  const words = new Set<string>();
  const visit = (v: unknown, key: string): void => {
    if (words.size >= MAX_CONFIG_WORDS) return;
    if (typeof v === "string") {
      if (key) words.add(key);
      words.add(v.replaceAll("_", " "));
    } else if (v === true && key) {
      words.add(key);
    } else if (Array.isArray(v)) {
      for (const x of v) visit(x, key);
    } else if (isRecord(v)) {
      for (const [k, x] of Object.entries(v)) visit(x, k.replaceAll("_", " "));
    }
  };
  visit(parsed, "");
  return [...words].join(" ");
}

/**
 * What one event says, in a line: the lineage stores it beside the event and
 * the CLI prints it (after the trial's id, which the lineage keeps in a column
 * of its own). `fraction` writes accuracies: the lineage keeps four decimals,
 * a console shows percentages.
 */
/**
 * An event in one line. `o` is the run's objective (its RunStarted comes first); for people, its
 * numbers are written as the metric is (a percentage for accuracy), else with four decimals.
 */
export function eventText(e: Event, o: Objective = ACCURACY, forPeople = false): string {
  const fraction = (x: number) => (forPeople ? formatMetric(o, x) : x.toFixed(4));
  const b = e.body;
  const failed = (what: string, f: Failure) => `${what} [${labelName(f.label)}] ${f.message.split("\n")[0]}`;
  switch (b.case) {
    case "runStarted": {
      const goal = b.value.goal;
      // Runs started before goals carried a description show their target.
      return `run ${e.runId} started: ${goal?.description || `${goal?.dataset} target ${(goal?.target ?? 0).toFixed(4)}`}${b.value.start ? `; starting from ${b.value.start.origin}` : ""}`;
    }
    case "briefReady": {
      return `brief ready: ${briefTitle(briefSent(b.value)) ?? b.value.query}`;
    }
    case "trialProposed":
      return `proposed [${b.value.mutation === Mutation.BASELINE ? "start" : (SURFACE.name(b.value.surface) ?? "")}] ${b.value.hypothesis}`;
    case "trialAssembled":
      return b.value.failure ? failed("assembly failed", b.value.failure) : `assembled: ${int(b.value.summary?.totalParams ?? 0n)} params`;
    case "trialProgress": {
      const p = b.value.progress;
      // Progress of runners from before val_metric carries accuracy alone.
      return p ? `epoch ${p.epoch}/${p.epochs} (seed ${p.seed}): ${o.key} ${fraction(p.valMetric || p.valAccuracy)}, ${p.seconds.toFixed(0)} s` : "progress";
    }
    case "trialEvaluated": {
      if (b.value.failure) return failed("failed", b.value.failure);
      const stats = b.value.result?.aggregated[o.key];
      const basis = standingOf(b.value.result, o);
      return stats && basis
        ? `${o.key} ${fraction(stats.mean)} [${fraction(stats.ci95[0] ?? 0)}, ${fraction(stats.ci95[1] ?? 0)}] over ${intervalBasis(basis)} (95% CI) in ${b.value.evalSeconds.toFixed(0)} s`
        : "evaluated";
    }
    case "trialJudged":
      return `${VERDICT.name(b.value.verdict) ?? "?"} -> ${DECISION.name(b.value.decision) ?? "?"}: ${b.value.reason}`;
    case "plannerIdle":
      return `planner idle: ${b.value.reason}; nothing in flight`;
    case "runnerJobs":
      return `runner jobs: ${jobsText(b.value)}`;
    case "runResumed":
      return `run resumed: ${b.value.downtimeS.toFixed(0)} s down, not counted against the time budget${b.value.timeBudgetS ? `, which is now ${b.value.timeBudgetS.toFixed(0)} s of live time` : ""}`;
    case "runFinished":
      return `run finished: ${RUN_STATUS.name(b.value.status) ?? ""} (${b.value.reason}), best ${b.value.bestTrialId || "none"} of ${b.value.trials} trials${b.value.testSkipped ? `; no test accuracy: ${b.value.testSkipped}` : ""}`;
    case "runIntervention":
      return `${INTERVENTION_KIND.name(b.value.kind) ?? "?"} by ${b.value.who}${e.trialId ? ` (${e.trialId})` : ""}${b.value.hypothesis || b.value.reason ? `: ${b.value.hypothesis || b.value.reason}` : ""}`;
    default:
      return "";
  }
}

/** The lineage's one-line summary of an event, clipped to what a row holds. */
export function summarize(e: Event): string {
  const s = eventText(e);
  return s.length > 300 ? `${s.slice(0, 297)}...` : s;
}

function collectStrings(v: unknown, out: string[]): void {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) for (const x of v) collectStrings(x, out);
  else if (isRecord(v)) for (const x of Object.values(v)) collectStrings(x, out);
}
