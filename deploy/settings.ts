/**
 * A run's settings from a launch's flags: light on purpose (no bus, no gRPC), so a CLI
 * checks its flags before it loads the swarm.
 */
import { resolve } from "node:path";
import { create } from "@bufbuild/protobuf";
import { DEFAULT_SEEDS, DEFAULT_TIME_BUDGET_S, RUN_DEFAULTS } from "../core/defaults.js";
import { RunSettingsSchema, type Goal, type RunSettings } from "../proto/gen/research/v1/events_pb.js";
import type { HealthResponse } from "../proto/gen/research/v1/runner_pb.js";

export const SETTING_DEFAULTS = { ...RUN_DEFAULTS, seeds: DEFAULT_SEEDS } as const;

/**
 * Trials in flight by default: two on a CPU runner (its slots go to a trial's seeds); on a
 * GPU runner half its slots, at most four, since small trials leave a GPU idle and four
 * ResNet-9 trainings already share an H200's throughput (docs/BENCHMARKS.md).
 */
export function defaultParallel(health?: Pick<HealthResponse, "slots" | "device">): number {
  if (health?.device?.kind !== "cuda") return SETTING_DEFAULTS.parallel;
  return Math.max(SETTING_DEFAULTS.parallel, Math.min(4, Math.floor(health.slots / 2)));
}

/** `runners`: the runners the run is given (launch --runners slurm: its jobs), each `health`'s like. */
export function runSettings(goal: Goal, partial: Partial<RunSettings>, workspace: string, health?: Pick<HealthResponse, "slots" | "device">, runners = 1): RunSettings {
  const budget = goal.timeBudgetS || DEFAULT_TIME_BUDGET_S;
  return create(RunSettingsSchema, {
    ...SETTING_DEFAULTS,
    // Per runner: runner jobs that are not up yet take none of them (swarm/run-state.ts capacityOf).
    parallel: defaultParallel(health) * runners,
    // A seed may use the whole run (at least a minute): the budget plan admits a
    // trial only when it is predicted to fit, and the run's last long training,
    // whose seeds may share a CPU's cores from its start to the reserve
    // (agents/planner/time-model.ts seedsAtOnce), must not be cut by this cap:
    // at 70% of the budget it cut 17b7df3's first 15-minute run's at 528 s a
    // seed of the 651 s it had, and the run ended with 146 s unused.
    trialTimeBudgetS: Math.max(60, budget),
    ...Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined && v !== 0 && v !== "")),
    research: partial.research ?? SETTING_DEFAULTS.research,
    workspace: resolve(workspace),
  });
}

