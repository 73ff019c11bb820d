/**
 * Early stopping of running trials by the median stopping rule (Golovin et
 * al., "Google Vizier", 2017), within a fidelity rung and a learning-rate
 * schedule: a trial whose validation metric after epoch e is clearly worse than
 * the median of its peers' finished curves after epoch e is stopped, and its
 * slot goes to the next proposal. Peers share the schedule because it shapes
 * the early epochs: a one-cycle warm-up trails a constant rate, and on an
 * H200 two ResNet-9 probes were pruned after epoch 1 of 3 (76% and 81%)
 * against a median of 84% set by Adam trials. They share its length too (the
 * epochs, and the seconds of a training bound by time), since a schedule's
 * rate at epoch e is a function of it: a table run's 200-epoch long trainings,
 * still warming up at epoch 4 or 15, were pruned against the median of
 * 60-epoch promotions at the same rung (tasks series at a8da4ae, classes
 * runs 0 and 1). Curves are compared seed for
 * seed (each trial's first seed, the run's: swarm/run-state.ts firstSeed), since seeds of one
 * trial start at different times.
 *
 * A Pareto goal's trial is compared only with peers no larger than it (parameters, the cost a
 * trial declares before it trains; latency is timed at its end): a small model less accurate
 * than the median of larger ones may still be on the front, and dc836a7's Pareto run pruned
 * its 2.7k-parameter ghost-net against a median set by 20k-170k ones. With fewer than
 * MIN_PEERS as small, it runs to the end.
 */
import { create } from "@bufbuild/protobuf";
import { EvalResultSchema, LearningCurveSchema, SeedResultSchema, type EpochProgress, type EvalResult } from "../../proto/gen/research/v1/runner_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { firstSeed, type RunState } from "../../swarm/run-state.js";
import { metricCurves, paramsOf, type TrialState } from "../../swarm/trial-state.js";
import { tradeOffsOf } from "../../swarm/front.js";
import { RECIPE_DEFAULTS } from "../../core/space.js";
import { formatMetric, tolerance, utility, type Objective } from "../../core/objective.js";

/** Finished peers needed before the median means anything. */
const MIN_PEERS = 4;
/** How much worse than the median counts as clearly worse: accuracy points, or a share of a regression's median. */
const MARGIN = 0.01;

const rungOf = (t: TrialState) => t.proposed?.rung ?? 0;
/** The schedule a trial trains with, as its author wrote it (the schema's default when absent), and its length. */
function scheduleOf(t: TrialState): string {
  const epochs = t.train?.epochs ?? RECIPE_DEFAULTS.epochs;
  const seconds = t.train?.train_seconds ?? 0;
  return `${t.train?.schedule ?? RECIPE_DEFAULTS.schedule} schedule of ${epochs} epochs${seconds > 0 ? ` or ${seconds} s` : ""}`;
}

/** The metric of `seed` after an epoch. */
function curveAt(t: TrialState, seed: number, epoch: number): number | undefined {
  return metricCurves(t.objective, t.evaluated?.result?.seedResults.find((s) => s.seed === seed)?.learningCurve).val[epoch - 1];
}

function clearlyWorse(o: Objective, value: number, median: number): boolean {
  return utility(o, value) < utility(o, median) - tolerance(o, MARGIN, median);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Why `trial` should stop after this progress report, or undefined to let it run. */
export function pruneReason(state: RunState, trial: TrialState, p: EpochProgress): string | undefined {
  // The last epoch costs nothing more to finish, and a finished curve is worth more.
  const seed = firstSeed(state.settings);
  if (p.seed !== seed || p.epoch >= p.epochs) return undefined;
  const rung = rungOf(trial);
  const schedule = scheduleOf(trial);
  // A Pareto goal's peers: no larger than the trial (Infinity: any size, for a single objective).
  const size = tradeOffsOf(state).length ? (paramsOf(trial) ?? 0) : Infinity;
  const peers: number[] = [];
  for (const t of state.trials.values()) {
    if (t.id === trial.id || rungOf(t) !== rung || scheduleOf(t) !== schedule || t.judged?.verdict !== Verdict.ACCEPT) continue;
    if ((paramsOf(t) ?? Infinity) > size) continue;
    const v = curveAt(t, seed, p.epoch);
    if (v !== undefined) peers.push(v);
  }
  if (peers.length < MIN_PEERS) return undefined;
  const m = median(peers);
  const o = state.objective;
  const value = p.valMetric || p.valAccuracy;
  if (!clearlyWorse(o, value, m)) return undefined;
  return `after epoch ${p.epoch}/${p.epochs}: seed ${seed} validation ${o.label} ${formatMetric(o, value)} is ${o.higherIsBetter ? "below" : "above"} the median ${formatMetric(o, m)} of ${peers.length} finished trials at rung ${rung} with a ${schedule}${Number.isFinite(size) ? ` and at most its ${size} parameters` : ""}`;
}

/** The curves a stopped evaluation reached, per seed, so the lineage keeps them. */
export function partialResult(progress: EpochProgress[]): EvalResult {
  const bySeed = new Map<number, EpochProgress[]>();
  for (const p of progress) bySeed.set(p.seed, [...(bySeed.get(p.seed) ?? []), p]);
  const seedResults = [...bySeed.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([seed, ps]) => {
      const sorted = ps.sort((a, b) => a.epoch - b.epoch);
      return create(SeedResultSchema, {
        seed,
        epochsCompleted: sorted.length,
        seconds: sorted.at(-1)?.seconds ?? 0,
        learningCurve: create(LearningCurveSchema, {
          trainLoss: sorted.map((x) => x.trainLoss),
          trainAccuracy: sorted.map((x) => x.trainAccuracy),
          valLoss: sorted.map((x) => x.valLoss),
          valAccuracy: sorted.map((x) => x.valAccuracy),
          valMetric: sorted.map((x) => x.valMetric),
          lr: sorted.map((x) => x.lr),
        }),
      });
    });
  return create(EvalResultSchema, { seedResults, numSeeds: seedResults.length });
}
