import { Binary, Field, Float32, Float64, FixedSizeList, Int32, Int64, List, Schema, Utf8, type DataType } from "apache-arrow";

/**
 * Explicit Arrow schemas, so every table exists (empty) from the first open: LanceDB infers
 * types from data and cannot from an empty or all-null batch. Conventions: text is
 * non-null ("" when unknown) so filters never need IS NULL; metrics are nullable Float64 so
 * "not measured" differs from 0; times are Int64 epoch milliseconds taken from the events
 * (never the wall clock, so applying an event twice writes identical rows).
 */

import type { DecisionName, GoalStatusName, RunStatusName, SurfaceName, VerdictName } from "../core/enums.js";
import type { FailureName } from "../core/failure.js";
import type { TrialStage, TrialStatus } from "../swarm/trial-state.js";
export { TRIAL_STAGES, type TrialStage, type TrialStatus } from "../swarm/trial-state.js";

export interface RunRow {
  run_id: string;
  /** The user's words. */
  goal: string;
  dataset: string;
  metric: string;
  target: number | null;
  max_params: number | null;
  /** running until run_finished, then how it ended; "" before run_started. */
  status: RunStatusName | "";
  started_at: number | null;
  finished_at: number | null;
  best_trial_id: string;
  best_score: number | null;
  trials: number;
  reason: string;
  goal_json: string;
  settings_json: string;
  report_path: string;
  registry_path: string;
  test_result_json: string;
  /** The dataset as the runner described it at launch (DatasetInfo as JSON); "" for a run that recorded none. */
  dataset_json: string;
  updated_at: number;
}

export interface TrialRow {
  trial_id: string;
  run_id: string;
  index: number;
  /** The furthest stage, or failed once any stage reported a failure label. */
  status: TrialStatus;
  /** The furthest pipeline stage whose event was applied, failed or not. */
  stage: TrialStage;
  surface: SurfaceName | "";
  hypothesis: string;
  rationale: string;
  parent_ids: string[];
  adopted_concepts: string[];
  proposer: string;
  model_config_json: string;
  train_config_json: string;
  code: string;
  class_name: string;
  diff: string;
  params: number | null;
  flops: number | null;
  /** Mean validation accuracy over seeds, with the 95% Student's t interval of the mean. */
  val_accuracy: number | null;
  ci_low: number | null;
  ci_high: number | null;
  std: number | null;
  seeds: number | null;
  goal_status: GoalStatusName | "";
  failure_label: FailureName | "";
  failure_message: string;
  /** The stage whose event carried the failure (see trialFailure: the earliest one wins), "" when none. */
  failure_stage: TrialStage | "";
  verdict: VerdictName | "";
  decision: DecisionName | "";
  reason: string;
  gain: number | null;
  analysis_json: string;
  eval_seconds: number | null;
  result_json: string;
  created_at: number;
  updated_at: number;
}

export interface BriefRow {
  brief_id: string;
  run_id: string;
  query: string;
  title: string;
  brief_json: string;
  author: string;
  created_at: number;
}

export interface EventRow {
  event_id: string;
  run_id: string;
  trial_id: string;
  /** The snake_case name of the event body, e.g. trial_evaluated. */
  kind: string;
  emitted_at: number;
  producer: string;
  summary: string;
  /** The protobuf Event, exactly as received: `fromBinary(EventSchema, payload)`. */
  payload: Uint8Array;
}

const text = (name: string) => new Field(name, new Utf8(), false);
const col = (name: string, type: DataType, nullable = true) => new Field(name, type, nullable);
const textList = (name: string) => new Field(name, new List(new Field("item", new Utf8(), true)), false);
const vector = (dim: number) => new Field("vector", new FixedSizeList(dim, new Field("item", new Float32(), true)), false);

/** Schema metadata key naming the embedder whose vectors fill the table. */
export const EMBEDDER_KEY = "lineage.embedder";

export function runsSchema(dim: number, embedder: string): Schema {
  return new Schema(
    [
      text("run_id"), text("goal"), text("dataset"), text("metric"),
      col("target", new Float64()), col("max_params", new Int64()),
      text("status"), col("started_at", new Int64()), col("finished_at", new Int64()),
      text("best_trial_id"), col("best_score", new Float64()), col("trials", new Int32(), false),
      text("reason"), text("goal_json"), text("settings_json"), text("report_path"), text("registry_path"),
      text("test_result_json"), col("updated_at", new Int64(), false), text("dataset_json"),
      vector(dim),
    ],
    new Map([[EMBEDDER_KEY, embedder]]),
  );
}

export function trialsSchema(dim: number, embedder: string): Schema {
  return new Schema(
    [
      text("trial_id"), text("run_id"), col("index", new Int32(), false), text("status"), text("stage"),
      text("surface"), text("hypothesis"), text("rationale"), textList("parent_ids"), textList("adopted_concepts"),
      text("proposer"), text("model_config_json"), text("train_config_json"), text("code"), text("class_name"),
      text("diff"), col("params", new Int64()), col("flops", new Int64()),
      col("val_accuracy", new Float64()), col("ci_low", new Float64()), col("ci_high", new Float64()),
      col("std", new Float64()), col("seeds", new Int32()), text("goal_status"),
      text("failure_label"), text("failure_message"), text("failure_stage"), text("verdict"), text("decision"), text("reason"),
      col("gain", new Float64()), text("analysis_json"), col("eval_seconds", new Float64()), text("result_json"),
      col("created_at", new Int64(), false), col("updated_at", new Int64(), false),
      vector(dim),
    ],
    new Map([[EMBEDDER_KEY, embedder]]),
  );
}

export function briefsSchema(dim: number, embedder: string): Schema {
  return new Schema(
    [
      text("brief_id"), text("run_id"), text("query"), text("title"), text("brief_json"), text("author"),
      col("created_at", new Int64(), false),
      vector(dim),
    ],
    new Map([[EMBEDDER_KEY, embedder]]),
  );
}

export function eventsSchema(): Schema {
  return new Schema([
    text("event_id"), text("run_id"), text("trial_id"), text("kind"), col("emitted_at", new Int64(), false),
    text("producer"), text("summary"), col("payload", new Binary(), false),
  ]);
}
