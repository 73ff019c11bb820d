import { toJsonString } from "@bufbuild/protobuf";
import { labelName } from "../core/failure.js";
import type { Failure } from "../proto/gen/research/v1/common_pb.js";
import type { FailureName } from "../core/failure.js";
import { isRecord, parseJson } from "../core/json.js";
import { trialFailure } from "../swarm/run-state.js";
import { DECISION, GOAL_STATUS, INTERVENTION_KIND, RUN_STATUS, SURFACE, VERDICT } from "../core/enums.js";
import { AnalysisSchema, GoalSchema, RunSettingsSchema, type Event } from "../proto/gen/research/v1/events_pb.js";
import { EvalResultSchema, type EvalResult } from "../proto/gen/research/v1/runner_pb.js";
import { TRIAL_STAGES, type BriefRow, type RunRow, type TrialRow, type TrialStage } from "./schema.js";
import { intervalBasis, standingOf } from "../core/ranking.js";

/**
 * Pure event -> row folding. Every rule is "set from the event", "max" or "first non-empty",
 * so applying an event twice, or a redelivered event late, gives the same row as applying
 * each event once in pipeline order.
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
const stageRank = (s: TrialStage) => TRIAL_STAGES.indexOf(s);
/** Object.assign, but the compiler checks the patch against the row type. */
const patch = <T extends object>(row: T, p: Partial<T>): void => void Object.assign(row, p);

export function emptyTrial(trialId: string, runId: string, at: number): TrialRow {
  return {
    trial_id: trialId, run_id: runId, index: 0, status: "proposed", stage: "proposed", surface: "", hypothesis: "",
    rationale: "", parent_ids: [], adopted_concepts: [], proposer: "", model_config_json: "", train_config_json: "",
    code: "", class_name: "", diff: "", params: null, flops: null, val_accuracy: null, ci_low: null, ci_high: null,
    std: null, seeds: null, goal_status: "", failure_label: "", failure_message: "", failure_stage: "", verdict: "", decision: "",
    reason: "", gain: null, analysis_json: "", eval_seconds: null, result_json: "", created_at: at, updated_at: at,
  };
}

export function emptyRun(runId: string, at: number): RunRow {
  return {
    run_id: runId, goal: "", dataset: "", metric: "", target: null, max_params: null, status: "", started_at: null,
    finished_at: null, best_trial_id: "", best_score: null, trials: 0, reason: "", goal_json: "", settings_json: "",
    report_path: "", registry_path: "", test_result_json: "", updated_at: at,
  };
}

/**
 * Applies one trial event to its row in place. The row's failure follows
 * trialFailure's rule (the earliest stage's labelled failure wins) whatever
 * order the stages arrive in, since the store reads each kind through its own
 * consumer.
 */
export function foldTrialRow(row: TrialRow, e: Event): void {
  const stage = e.body.case ? TRIAL_EVENT_STAGE[e.body.case] : undefined;
  if (!stage) return;
  const reached = row.stage;
  if (!row.run_id) row.run_id = e.runId;
  row.created_at = Math.min(row.created_at, ms(e));
  row.updated_at = Math.max(row.updated_at, ms(e));
  if (stageRank(stage) > stageRank(reached)) row.stage = stage;

  switch (e.body.case) {
    case "trialProposed": {
      const p = e.body.value;
      patch(row, {
        index: p.index, hypothesis: p.hypothesis, rationale: p.rationale, parent_ids: [...p.parentIds],
        adopted_concepts: [...p.adoptedConcepts], proposer: p.proposer, model_config_json: p.modelConfigJson,
        train_config_json: p.trainConfigJson,
      });
      if (p.surface) row.surface = SURFACE.name(p.surface) ?? "";
      break;
    }
    case "trialAssembled": {
      const a = e.body.value;
      patch(row, { code: a.code, class_name: a.className, diff: a.diff });
      if (a.summary && a.summary.totalParams > 0n) {
        row.params = Number(a.summary.totalParams);
        row.flops = Number(a.summary.flops);
      }
      break;
    }
    case "trialEvaluated": {
      const ev = e.body.value;
      if (ev.result) applyResult(row, ev.result);
      if (ev.analysis) row.analysis_json = toJsonString(AnalysisSchema, ev.analysis);
      row.eval_seconds = ev.evalSeconds;
      break;
    }
    case "trialJudged": {
      const j = e.body.value;
      patch(row, {
        verdict: VERDICT.name(j.verdict) ?? "", decision: DECISION.name(j.decision) ?? "", reason: j.reason, gain: j.gain,
      });
      if (!row.surface) row.surface = SURFACE.name(j.surface) ?? "";
      // The evaluation's own statistics win; the judge's copy fills in when that event is missing.
      if (row.val_accuracy === null && j.score > 0) {
        patch(row, { val_accuracy: j.score, ci_low: j.ciLow, ci_high: j.ciHigh });
      }
      break;
    }
  }

  const failure = trialFailure({ [stage]: e.body.value } as Parameters<typeof trialFailure>[0]);
  if (failure && (!row.failure_stage || stageRank(stage) < stageRank(row.failure_stage))) {
    patch(row, { failure_label: labelName(failure.label) as FailureName, failure_message: failure.message, failure_stage: stage });
  }
  row.status = row.failure_label ? "failed" : row.stage;
}

function applyResult(row: TrialRow, r: EvalResult): void {
  row.result_json = toJsonString(EvalResultSchema, r);
  const acc = r.aggregated.val_accuracy;
  if (acc) {
    patch(row, { val_accuracy: acc.mean, std: acc.std, ci_low: acc.ci95[0] ?? null, ci_high: acc.ci95[1] ?? null });
  }
  row.seeds = r.numSeeds;
  row.goal_status = GOAL_STATUS.name(r.goalStatus) ?? "";
  if (r.params > 0n) row.params = Number(r.params);
}

/** Applies one run-level event to its row in place. */
export function foldRunRow(row: RunRow, e: Event): void {
  row.updated_at = Math.max(row.updated_at, ms(e));
  switch (e.body.case) {
    case "runStarted": {
      const { goal, settings } = e.body.value;
      if (goal) {
        patch(row, {
          goal: goal.rawText, dataset: goal.dataset, metric: goal.metric, target: goal.target,
          max_params: goal.maxParams > 0n ? Number(goal.maxParams) : null, goal_json: toJsonString(GoalSchema, goal),
        });
      }
      if (settings) row.settings_json = toJsonString(RunSettingsSchema, settings);
      row.started_at = ms(e);
      if (!row.status) row.status = "running";
      break;
    }
    case "trialJudged": {
      const j = e.body.value;
      row.trials = Math.max(row.trials, j.trialsDone);
      if (!row.status) row.status = "running";
      // Once finished, the run's best trial is the one run_finished named.
      if (row.finished_at === null && j.bestTrialId && j.bestTrialId !== row.best_trial_id) {
        row.best_trial_id = j.bestTrialId;
        // Filled from the best trial's row by the store, which may hold it in another batch.
        row.best_score = null;
      }
      break;
    }
    case "runFinished": {
      const f = e.body.value;
      patch(row, {
        status: RUN_STATUS.name(f.status) ?? "", finished_at: ms(e), report_path: f.reportPath, registry_path: f.registryPath,
        trials: Math.max(row.trials, f.trials), reason: f.reason,
        test_result_json: f.testResult ? toJsonString(EvalResultSchema, f.testResult) : "",
      });
      if (f.bestTrialId && f.bestTrialId !== row.best_trial_id) {
        row.best_trial_id = f.bestTrialId;
        row.best_score = null;
      }
      break;
    }
  }
}

export function briefRow(e: Event): BriefRow | undefined {
  if (e.body.case !== "briefReady") return undefined;
  const b = e.body.value;
  const parsed = parseJson(b.briefJson);
  const title = isRecord(parsed) && typeof parsed.summary_title === "string" ? parsed.summary_title : "";
  return {
    brief_id: b.briefId, run_id: e.runId, query: b.query, title, brief_json: b.briefJson, author: b.author,
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
export function eventText(e: Event, fraction: (x: number) => string = (x) => x.toFixed(4)): string {
  const b = e.body;
  const failed = (what: string, f: Failure) => `${what} [${labelName(f.label)}] ${f.message.split("\n")[0]}`;
  switch (b.case) {
    case "runStarted": {
      const goal = b.value.goal;
      // Runs started before goals carried a description show their target.
      return `run ${e.runId} started: ${goal?.description || `${goal?.dataset} target ${fraction(goal?.target ?? 0)}`}`;
    }
    case "briefReady": {
      const brief = parseJson(b.value.briefJson);
      return `brief ready: ${isRecord(brief) && typeof brief.summary_title === "string" ? brief.summary_title : b.value.query}`;
    }
    case "trialProposed":
      return `proposed [${SURFACE.name(b.value.surface) ?? ""}] ${b.value.hypothesis}`;
    case "trialAssembled":
      return b.value.failure ? failed("assembly failed", b.value.failure) : `assembled: ${(b.value.summary?.totalParams ?? 0n).toLocaleString()} params`;
    case "trialProgress": {
      const p = b.value.progress;
      return p ? `epoch ${p.epoch}/${p.epochs} (seed ${p.seed}): val_accuracy ${fraction(p.valAccuracy)}, ${p.seconds.toFixed(0)} s` : "progress";
    }
    case "trialEvaluated": {
      if (b.value.failure) return failed("failed", b.value.failure);
      const acc = b.value.result?.aggregated.val_accuracy;
      const basis = standingOf(b.value.result);
      return acc && basis
        ? `val_accuracy ${fraction(acc.mean)} [${fraction(acc.ci95[0] ?? 0)}, ${fraction(acc.ci95[1] ?? 0)}] over ${intervalBasis(basis)} (95% CI) in ${b.value.evalSeconds.toFixed(0)} s`
        : "evaluated";
    }
    case "trialJudged":
      return `${VERDICT.name(b.value.verdict) ?? "?"} -> ${DECISION.name(b.value.decision) ?? "?"}: ${b.value.reason}`;
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
