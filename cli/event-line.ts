/** The console's line for a lineage event, for launch and watch. */
import { DEFAULT_SEEDS, PROBE_SEEDS } from "../core/defaults.js";
import { labelName } from "../core/failure.js";
import { shortTrialId } from "../core/ids.js";
import { bestRule, intervalBasis } from "../core/ranking.js";
import { eventText } from "../lineage-store/fold.js";
import type { Event, RunSettings } from "../proto/gen/research/v1/events_pb.js";
import type { EpochProgress } from "../proto/gen/research/v1/runner_pb.js";
import { duration } from "../lineage-store/report-json.js";
import { bestTrial, firstSeed, inFlightCount, liveSeconds, type RunState } from "../swarm/run-state.js";
import { meanOf, scoreText, standing, type TrialState } from "../swarm/trial-state.js";
import { formatMetric } from "../core/objective.js";

/** What the run's banner promises about seeds: every planner probes a slice of the split with one. */
function seedPlan(settings: RunSettings | undefined): string {
  const seeds = settings?.seeds || DEFAULT_SEEDS;
  return seeds !== PROBE_SEEDS
    ? `trials on a slice of the training split train ${PROBE_SEEDS} seed, trials on the full split ${seeds}`
    : `${seeds} seeds a trial`;
}

/**
 * ", ~2.5 min left": a training that the clock stops (the run's last, its epochs an upper bound)
 * by its clock, any other by the epochs left at its pace so far.
 */
export function timeLeft(p: EpochProgress, t: TrialState | undefined): string {
  const clock = t?.train?.train_seconds ?? 0;
  const left = clock > 0 ? clock - p.seconds : p.epoch > 0 ? (p.seconds / p.epoch) * (p.epochs - p.epoch) : 0;
  const stops = clock > 0 ? `; its clock stops it at ${duration(clock)}, before epoch ${p.epochs}` : "";
  return left > 0 ? `, ~${duration(left)} left${stops}` : stops;
}

/** ", 17.5 min of the 30.0 min budget left" at the event's time: the run's live clock against its time budget. */
function budgetLeft(s: RunState, atMs: number): string {
  const budget = s.goal?.timeBudgetS ?? 0;
  return budget > 0 ? ` | ${duration(Math.max(0, budget - liveSeconds(s, atMs)))} of ${duration(budget)} left` : "";
}

/** Where the run stands after a judgement: its best trial, what is left in flight, its failures by label. */
function standingLine(judgedCount: number, s: RunState): string {
  const best = bestTrial(s);
  const failures = new Map<string, number>();
  for (const t of s.trials.values()) {
    if (t.judged?.failure) failures.set(labelName(t.judged.failure.label), (failures.get(labelName(t.judged.failure.label)) ?? 0) + 1);
  }
  const bestText = best ? `${shortTrialId(best.id)} ${formatMetric(s.objective, meanOf(best) ?? 0)} (${scoreText(best)}, ${intervalBasis({ seeds: standing(best)?.seeds ?? 0, valExamples: 0 })})` : "none";
  const failureText = failures.size ? ` | failures ${[...failures].map(([k, v]) => `${k}:${v}`).join(" ")}` : "";
  return `best ${bestText} | ${judgedCount} judged, ${inFlightCount(s)} in flight${failureText}`;
}

/** One line per meaningful event: the lineage's text with the trial's short id, and the run's state where it says more. */
export function describeEvent(e: Event, s: RunState): string | undefined {
  const b = e.body;
  // One seed stands for the trial; all seeds' curves are in the results.
  if (b.case === "trialProgress" && b.value.progress?.seed !== firstSeed(s.settings)) return undefined;
  const text = eventText(e, s.objective, true);
  if (!text) return undefined;
  // An intervention's text names its trial in full.
  const line = e.trialId && b.case !== "runIntervention" ? `${shortTrialId(e.trialId)} ${text}` : text;
  if (b.case === "runStarted") return `${line} (planner ${b.value.settings?.planner}; ${seedPlan(b.value.settings)}; best: ${bestRule(s.objective)})`;
  if (b.case === "trialJudged") return `${line} | ${standingLine(b.value.trialsDone, s)}${budgetLeft(s, Number(e.emittedAtMs))}`;
  if (b.case === "trialProgress" && b.value.progress) return `${line}${timeLeft(b.value.progress, s.trials.get(e.trialId))}`;
  return line;
}
