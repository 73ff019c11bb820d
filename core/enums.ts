import type { GenEnum } from "@bufbuild/protobuf/codegenv2";
import { Mutation, MutationSchema, Surface, SurfaceSchema, TrialStatus, TrialStatusSchema } from "../proto/gen/research/v1/common_pb.js";
import { Decision, DecisionSchema, InterventionKind, InterventionKindSchema, RunStatus, RunStatusSchema, Verdict, VerdictSchema } from "../proto/gen/research/v1/events_pb.js";
import {
  GoalStatus,
  GoalStatusSchema,
  Metric,
  MetricSchema,
  Optimizer,
  OptimizerSchema,
  Schedule,
  ScheduleSchema,
  ScriptLanguage,
  ScriptLanguageSchema,
  Task,
  TaskSchema,
} from "../proto/gen/research/v1/runner_pb.js";

/*
 * Every closed set of the swarm (failure labels, surfaces, optimizers, ...) is a proto enum;
 * TypeScript lists, zod schemas and human-facing text derive from it here. People, LLMs,
 * reports and LanceDB columns use the snake_case name without the enum's prefix
 * (FAILURE_LABEL_NAN_LOSS -> "nan_loss"); the wire carries the number. The zero value
 * means "not set" in proto3, so it has no name and is never a member.
 */

/** The snake_case names of a generated TS enum, e.g. "nan_loss" for FailureLabel.NAN_LOSS. */
export type EnumName<E extends object> = Lowercase<Exclude<Extract<keyof E, string>, "UNSPECIFIED">>;
type EnumValue<E extends object> = Extract<E[keyof E], number>;

export interface ClosedSet<V extends number, N extends string> {
  /** In declaration order, which is the order of the set where it has one (trial stages). */
  readonly names: readonly [N, ...N[]];
  /** undefined for the zero value and for numbers this build does not know. */
  name(value: V): N | undefined;
  /** undefined for a name outside the set. */
  value(name: string): V | undefined;
}

/** Usage: `closedSet<typeof FailureLabel>(FailureLabelSchema)`: the TS enum gives the names' type, its schema the values. */
export function closedSet<E extends object>(schema: GenEnum<EnumValue<E>>): ClosedSet<EnumValue<E>, EnumName<E>> {
  type N = EnumName<E>;
  type V = EnumValue<E>;
  const members = schema.values.filter((v) => v.number !== 0);
  const names = members.map((v) => v.localName.toLowerCase() as N);
  if (names.length === 0) throw new Error(`enum ${schema.typeName} has no members`);
  const byName = new Map<string, V>(members.map((v, i) => [names[i]!, v.number as V]));
  const byValue = new Map<number, N>(members.map((v, i) => [v.number, names[i]!]));
  return {
    names: names as [N, ...N[]],
    name: (value) => byValue.get(value),
    value: (name) => byName.get(name),
  };
}

// Failure labels live with the error class (core/failure.ts).
export const SURFACE = closedSet<typeof Surface>(SurfaceSchema);
export type SurfaceName = (typeof SURFACE.names)[number];
export const MUTATION = closedSet<typeof Mutation>(MutationSchema);
export type MutationName = (typeof MUTATION.names)[number];
export const OPTIMIZER = closedSet<typeof Optimizer>(OptimizerSchema);
export type OptimizerName = (typeof OPTIMIZER.names)[number];
export const SCHEDULE = closedSet<typeof Schedule>(ScheduleSchema);
export type ScheduleName = (typeof SCHEDULE.names)[number];
export const SCRIPT_LANGUAGE = closedSet<typeof ScriptLanguage>(ScriptLanguageSchema);
export const TRIAL_STATUS = closedSet<typeof TrialStatus>(TrialStatusSchema);
export const INTERVENTION_KIND = closedSet<typeof InterventionKind>(InterventionKindSchema);
export type InterventionKindName = (typeof INTERVENTION_KIND.names)[number];
export type TrialStatusName = (typeof TRIAL_STATUS.names)[number];
export const RUN_STATUS = closedSet<typeof RunStatus>(RunStatusSchema);
export type RunStatusName = (typeof RUN_STATUS.names)[number];
export const VERDICT = closedSet<typeof Verdict>(VerdictSchema);
export type VerdictName = (typeof VERDICT.names)[number];
export const DECISION = closedSet<typeof Decision>(DecisionSchema);
export type DecisionName = (typeof DECISION.names)[number];
export const GOAL_STATUS = closedSet<typeof GoalStatus>(GoalStatusSchema);
export type GoalStatusName = (typeof GOAL_STATUS.names)[number];
export const TASK = closedSet<typeof Task>(TaskSchema);
export type TaskName = (typeof TASK.names)[number];
export const METRIC = closedSet<typeof Metric>(MetricSchema);
export type MetricName = (typeof METRIC.names)[number];
