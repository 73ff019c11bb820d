/**
 * The dashboard's HTTP API as types: what the server (server.ts, views.ts)
 * sends and the pages (web/) read. JSON, snake_case like the report's
 * JSON and `runs --json`; values of a run's metric are in its units (an
 * accuracy a fraction, 0.9123; an RMSE the target's), times are
 * milliseconds since the epoch (`*_at`) or seconds (`*_s`). docs/DASHBOARD.md
 * documents each route with these shapes.
 *
 *   GET  /api/runs                              RunSummary[]
 *   GET  /api/runs/:run                         RunDetail
 *   GET  /api/runs/:run/trials/:trial           TrialDetail
 *   GET  /api/search?q=TEXT[&run=RUN][&k=N]     SearchHit[]
 *   POST /api/runs                              StartRunRequest (intake.ts) -> StartRunReply: serve's dashboard only
 *   GET  /api/queue                             QueueJson: the runs serve took, going and waiting
 *   POST /api/runs/:run/interventions           InterventionRequest (swarm/interventions.ts) -> InterventionReply
 *   GET  /api/events[?run=RUN]                  text/event-stream of LiveMessage
 */
import type { MetricName } from "../core/enums.js";
import type { InferenceCostJson } from "../lineage-store/report-model.js";
import type { Finding } from "../lineage-store/report-findings.js";
export type { InferenceCostJson, InferenceTimingJson } from "../lineage-store/report-model.js";
export type { QueueJson, QueuedRun, StartRunReply, StartRunRequest } from "./intake.js";

/** The run's objective (core/objective.ts), for whoever reads the JSON: its metric, its name for people, its direction. */
export interface ObjectiveJson {
  metric: MetricName;
  /** "accuracy", "RMSE". */
  label: string;
  higher_is_better: boolean;
  /** A share shown as a percentage (accuracy); any other metric is in its own units. */
  proportion: boolean;
}

/**
 * A number of the run's metric under the name the run's results give it: `val_accuracy`,
 * `test_rmse`, ...; the objective says which one a run has.
 */
export type MetricNamed<Prefix extends string, V> = { [K in `${Prefix}${MetricName}`]?: V };

/** 95% interval of a mean: the run's metric across seeds and examples (gpu-runner/stats.ts). */
export interface Interval {
  mean: number;
  ci95: [number, number];
  /** Seeds behind it. */
  n: number;
  /** Examples each seed was scored on (0: unknown); with `n`, what the interval counts. */
  examples: number;
}

export type RunStatusText = "running" | "paused" | "stopping" | "goal_achieved" | "budget_exhausted" | "stopped" | "failed" | "completed" | "interrupted";

/** `GET /api/runs`: one run. */
export interface RunSummary {
  run_id: string;
  goal: string;
  dataset: string;
  /** In the metric's units; 0 when open-ended. */
  target: number;
  open_ended: boolean;
  objective: ObjectiveJson;
  status: RunStatusText;
  /** Followed on the bus now (events arrive live). */
  live: boolean;
  trials: number;
  judged: number;
  in_flight: number;
  /** The run's best trial: its validation interval and `test_<metric>`, its one-time test confirmation (null until the run ends with one). */
  best: ({ trial_id: string; val: Interval } & MetricNamed<"test_", number | null>) | null;
  started_at: number;
  /** Wall seconds so far (running) or in all (finished). */
  seconds: number;
  time_budget_s: number;
  /** A Pareto goal's costs traded off against the metric, in the order written ("params", "latency": core/objective.ts COSTS); [] for any other goal. */
  trade_offs: string[];
  /** The most milliseconds one example's forward pass may take (batch 1, on the runner's device); null: no limit. */
  max_latency_ms: number | null;
}

export interface Fidelity {
  rung: number;
  /** Training examples; 0: the whole training split. */
  subset: number;
  epochs: number;
  seeds: number;
}

/** One row of the run's trial table. */
export interface TrialRow {
  trial_id: string;
  /** Position in the order proposed (1-based). */
  index: number;
  parent_ids: string[];
  surface: string;
  /** The run's starting point (launch --from): trial 0, and trial 1, its rung-0 anchor. */
  baseline: boolean;
  hypothesis: string;
  proposer: string;
  params: number | null;
  /** Milliseconds per example at batch 1 on the device it ran on, the median of its seeds' (swarm/front.ts latencyOf); null: not timed. */
  latency_ms: number | null;
  fidelity: Fidelity;
  /** proposed | assembled | evaluated | judged | failed (trial_status). */
  status: string;
  /** Latest per-epoch progress while it trains (seed 0), from the live feed, with `val_<metric>`; null otherwise. */
  progress: EpochJson | null;
  val: Interval | null;
  verdict: string | null;
  decision: string | null;
  failure_label: string | null;
  failure_message: string | null;
  proposed_at: number;
  judged_at: number | null;
  /** Config values for parallel coordinates: numbers only (depth, width, lr, batch_size, ...). */
  features: Record<string, number>;
}

/** One epoch of a trial training now: `val_<metric>`, the validation value after it. */
export type EpochJson = { epoch: number; epochs: number; seconds: number } & MetricNamed<"val_", number>;

/**
 * The best accepted bound after each judged trial, at the pessimistic end of its 95% interval:
 * `best_ci_low` for a metric to maximise, `best_ci_high` for one to minimise.
 */
export interface BestSoFarPoint {
  trial_id: string;
  /** Judged trials so far (1-based). */
  judged: number;
  /** Seconds since the run started. */
  t_s: number;
  best_ci_low?: number;
  best_ci_high?: number;
  best_trial_id: string;
}

export interface InterventionRow {
  intervention_id: string;
  /** pause, resume, stop, cancel_trial or propose. */
  kind: string;
  /** `ui:NAME` from the dashboard, the user's name from the CLI. */
  who: string;
  reason: string;
  trial_id: string;
  at: number;
  hypothesis: string;
  /** propose: the trial that took it, once one has. */
  taken_by: string | null;
}

export interface LlmUse {
  role: string;
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
}

/** `GET /api/runs/:run`: the summary and everything the run page shows. */
export interface RunDetail extends RunSummary {
  settings: Record<string, unknown>;
  paused: boolean;
  /** The run's runner jobs as last recorded (launch --runners slurm), as text: "1 of 2 up, 1 pending (Resources)"; null when its runners are not jobs. */
  runner_jobs: string | null;
  trials_table: TrialRow[];
  best_so_far: BestSoFarPoint[];
  failures: Record<string, number>;
  briefs: {
    title: string;
    insights: string[];
    suggestions: {
      name: string;
      description: string;
      /** The trials whose proposal adopted it. */
      adopted_by: string[];
    }[];
    /** The planner's request it answers; "" for the run's first. */
    request_id: string;
  }[];
  llm: LlmUse[];
  interventions: InterventionRow[];
  /** Why the run ended, when it has: the run's own words, without the verdict of the trial judged last (ended_by). */
  reason: string;
  /** The trial whose judgement ended the run; its outcome is that trial's, not the run's. */
  ended_by: string | null;
  report_path: string | null;
  /** Null for a run started from the swarm's templates. */
  against_start: AgainstStart | null;
  /** What the run started from in past runs: its trials whose configs came from there (a warm start), in the order proposed; empty for a cold start. */
  warm_start: WarmStartRow[];
  /** The results of past runs the planner's surrogate held as prior observations; null when it held none. */
  past_prior: PastPrior | null;
  /** A Pareto goal's front, as the report's JSON has it (lineage-store/report.ts frontJson); null for a goal that trades nothing off. */
  front: FrontJson | null;
  /** What the goal's latency limit did; null for a goal without one. */
  limits: LimitsJson | null;
  /** What the run found so far and the experiment each finding suggests, as the report's Next steps give them (lineage-store/report-findings.ts findingsOf). */
  findings: Finding[];
}


/** An objective's value for a trial: its mean and interval (the metric's 95% interval, a latency's spread over seeds, a count's own value). */
export interface Estimate {
  mean: number;
  low: number;
  high: number;
}

/** One axis of a Pareto goal: the run's metric first, then each cost (minimised), by its name for people ("parameters", "latency per example"). */
export interface FrontAxis {
  name: string;
  higher_is_better: boolean;
}

export interface FrontTrial {
  trial_id: string;
  /** One per axis, in the axes' order. */
  values: Estimate[];
  /** NSGA-II's crowding distance on the front; null for its extremes (infinite). */
  crowding: number | null;
}

/** The trials no other accepted rung-0 trial dominates (swarm/front.ts FRONT_RULE), best metric first. */
export interface FrontJson {
  /** The rule in words. */
  rule: string;
  axes: FrontAxis[];
  trials: FrontTrial[];
  /** The balanced trade-off (core/pareto.ts knee); null with none. */
  knee: string | null;
  /**
   * The front's trials trained again on the full split with the run's seeds: each one's trial,
   * the front trial it trains (`from`), its validation stats, its one-time test stats (null
   * before the run's end, or when not measured; stats as the report's: mean, std, ci_95, min,
   * max, n), its parameters and latency, and `on_front`: no other long training dominates it
   * (the claims' own front).
   */
  trained_long: { trial_id: string; from: string; val: Stats | null; test: Stats | null; params: number | null; latency_ms: number | null; on_front: boolean }[];
  /** The report's plot of it, relative to the run's folder. */
  plot: string;
}

type Stats = { mean: number; std: number; ci_95: [number, number] | null; min: number; max: number; n: number };

/** A goal's latency limit and what it did: the trials timed within it, those over it (labelled over_limit, never accepted), and the best within every limit. */
export interface LimitsJson {
  max_latency_ms: number;
  max_params: number | null;
  within: string[];
  over: string[];
  best_within: string | null;
  /** The latency the limit held the best to: the fastest seed median the run timed for its model (swarm/front.ts limitLatencyMs). */
  best_latency_ms: number | null;
}

/** Past runs' results in the surrogate's prior: each weighs 1/2 x exp(-distance of its dataset), each of this run's own 1. */
export interface PastPrior {
  /** Proposals the policy or an LLM made with them in the planner's input. */
  trials: number;
  /** The most past results at once, and their summed weight then. */
  observations: number;
  weight: number;
}

/** A trial of this run whose config is a past run's trial's, evaluated again here (agents/planner/policies/builtin.ts, warm starts). */
export interface WarmStartRow {
  trial_id: string;
  /** The past trials whose config it took, each with its run. */
  past: PastTrial[];
  /** What it took: their config, evaluated here from its own initialisation, or their trained weights, whose training it continued. */
  takes: "config" | "weights";
  /** Its validation interval here, in this run, once evaluated: no past score counts. */
  val: Interval | null;
  verdict: string | null;
}

export interface PastTrial {
  run_id: string;
  trial_id: string;
  /** How much its dataset is like this run's (1/2 x exp(-distance)); null in runs recorded before weights were. */
  weight: number | null;
}

/** best - trial 0 over the seeds both trained with (Student's t on the per-seed differences). */
export interface PairedGain {
  seeds: number[];
  baseline_mean: number;
  best_mean: number;
  gain: number;
  ci_95: [number, number];
  p: number;
}

/** The best model against the run's starting point (launch --from), by the report's rule (lineage-store/baseline.ts). */
export interface AgainstStart {
  origin: string;
  rule: string;
  baseline_trial_id: string;
  baseline_val_mean: number | null;
  baseline_test_mean: number | null;
  best_trial_id: string | null;
  val: PairedGain | null;
  test: PairedGain | null;
  recipe_changes: { field: string; from: unknown; to: unknown }[];
  argument_changes: { name: string; from: unknown; to: unknown }[];
  model_diff: string;
  /** The best trial's parents from trial 0, each step's measured change; null when it does not descend from trial 0. */
  path: { trial_id: string; mutation: string; hypothesis: string; rung: number; seeds: number; val_mean: number | null; change: number | null; same_fidelity: boolean }[] | null;
  best_root: { trial_id: string; mutation: string } | null;
}

/** One seed's curves per epoch. */
export interface SeedCurves {
  seed: number;
  train_loss: number[];
  train_accuracy: number[];
  val_loss: number[];
  val_accuracy: number[];
  /** The run's metric per epoch on the validation split, and on the training split where the runner measures it there ([] otherwise). */
  val_metric: number[];
  train_metric: number[];
  lr: number[];
  metrics: Record<string, number>;
  seconds: number;
}

/** `GET /api/runs/:run/trials/:trial`. */
export interface TrialDetail {
  run_id: string;
  objective: ObjectiveJson;
  row: TrialRow;
  rationale: string;
  adopted_concepts: string[];
  /** Past trials (of other runs) whose configs it starts from: a warm start, evaluated in this run. */
  informed_by: string[];
  /** The model's config as its author wrote it (null when not JSON). */
  model_config: unknown;
  /** The training config as its author wrote it (null when not JSON). */
  train_config: unknown;
  /** Unified diff of the configs (pretty JSON) against the first parent's; "" without a parent. */
  config_diff: string;
  code: string;
  /** Unified diff of the code against the first parent's (the coder's). */
  code_diff: string;
  summary: { total_params: number; flops: number; size_mb: number; layers: { name: string; type: string; output_shape: number[]; params: number }[] } | null;
  narrative: string;
  seeds: SeedCurves[];
  class_names: string[];
  /** Summed over seeds: rows are true classes, columns predicted. */
  confusion_matrix: number[][];
  per_class: { class_index: number; precision: number; recall: number; f1: number; support: number }[];
  analysis: { overfitting: string; convergence: string; weak_classes: number[]; notes: string[] } | null;
  judged_reason: string;
  failure: { label: string; message: string; traceback: string } | null;
  /** The run's one confirmation on the held-out test split: its best trial's, once the run has finished. */
  test: HeldOutTest | null;
  children: string[];
}

/** The run's metric on the test split for one trial's seed models: each alone, and the ensemble of their predictions. */
export interface HeldOutTest {
  /** The seeds' mean, with its 95% interval. */
  per_seed: Interval | null;
  /** Each seed's under the metric's name: `{ seed, accuracy }`, `{ seed, rmse }`. */
  seeds: ({ seed: number } & MetricNamed<"", number>)[];
  /** The ensemble of the seeds' predictions; null with one seed. */
  ensemble: Interval | null;
  /** What the model costs to run on the device it trained on, timed in the confirmation; null when not measured. */
  inference: InferenceCostJson | null;
}

/** `GET /api/search`: a trial like the text, from any run, with its run's objective and `val_<metric>`, its validation mean (null when not measured). */
export type SearchHit = {
  run_id: string;
  objective: ObjectiveJson;
  trial_id: string;
  /** Cosine distance: 0 is the same direction, lower is closer. */
  distance: number;
  hypothesis: string;
  failure_label: string | null;
} & MetricNamed<"val_", number | null>;

/** `POST /api/runs/:run/interventions`: an intervention published on the swarm's bus. */
export type InterventionReply = { ok: true; intervention_id: string; summary: string } | { ok: false; error: string };

/** Server-sent events (`GET /api/events`), by `type`: each kind's doc is before it. */
export type LiveMessage =
  | /**
     * An event was applied to a run (`kind`: the event's, e.g. `trialJudged`), or its fold was
     * replaced (`caught_up`, `bus_lost`): fetch again what shows the run.
     */
    { type: "change"; run_id: string; trial_id: string; kind: string }
  | /** An epoch ended in a trial training now (live only, never stored). */
    ({
      type: "progress";
      run_id: string;
      trial_id: string;
      seed: number;
      /** A classification's; 0 for a metric not measured in training. */
      train_accuracy: number;
    } & EpochJson);
