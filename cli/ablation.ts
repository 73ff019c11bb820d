/**
 * Does research help? The same goal run with the research phase on and off,
 * over matched planner seeds (run i of each arm uses seed i), on one swarm.
 * Reports the paired difference in the best validation score with a paired
 * t-test, and the research tool's own success criteria: briefs that
 * validate, and runs whose first trial adopts a brief concept.
 */
import { parseBrief } from "../core/brief.js";
import { RUN_STATUS } from "../core/enums.js";
import { pairedTTest, type PairedTest } from "../core/stats.js";
import type { Logger } from "../core/logger.js";
import { type Event, type Goal, type RunSettings, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import { runGoal, type Swarm } from "../deploy/swarm.js";
import { briefSent } from "../core/config-wire.js";

export interface ArmRun {
  research: boolean;
  seed: number;
  runId: string;
  status: string;
  trials: number;
  bestMean: number;
  bestCiLow: number;
  seconds: number;
  /** Research on: did the first trial adopt a concept from the brief? */
  adopted?: boolean;
  briefs: number;
  validBriefs: number;
}

export interface AblationResult {
  goal: string;
  runs: ArmRun[];
  /** research on minus research off, on the best mean validation accuracy. */
  meanTest?: PairedTest;
  /** The same on the best CI lower bound. */
  ciLowTest?: PairedTest;
  adoptionRate: number;
  validBriefRate: number;
}

export function summarise(research: boolean, seed: number, runId: string, events: Event[], status: string, seconds: number): ArmRun {
  const judged = events.filter((e) => e.body.case === "trialJudged").map((e) => (e.body.case === "trialJudged" ? e.body.value : undefined)!);
  // The run's best as the judge named it (a trial with a seed spread when there is one), not the highest of one-seed probes.
  const bestId = judged.at(-1)?.bestTrialId;
  const bestEvaluated = events.find((e) => e.trialId === bestId && e.body.case === "trialEvaluated");
  const bestMean = bestEvaluated?.body.case === "trialEvaluated" ? (bestEvaluated.body.value.result?.aggregated.val_accuracy?.mean ?? 0) : 0;
  const bestJudged = events.find((e) => e.trialId === bestId && e.body.case === "trialJudged");
  const briefs = events.flatMap((e) => (e.body.case === "briefReady" ? [briefSent(e.body.value)] : []));
  const first = events.find((e) => e.body.case === "trialProposed");
  return {
    research,
    seed,
    runId,
    status,
    trials: judged.length,
    bestMean,
    bestCiLow: bestJudged?.body.case === "trialJudged" ? bestJudged.body.value.ciLow : 0,
    seconds,
    adopted: research && first?.body.case === "trialProposed" ? first.body.value.adoptedConcepts.length > 0 : undefined,
    briefs: briefs.length,
    validBriefs: briefs.filter((b) => parseBrief(b).ok).length,
  };
}

export async function runAblation(
  swarm: Swarm,
  opts: { goal: Goal; start?: StartingPoint; settings: (research: boolean, seed: number) => RunSettings; runs: number; log: Logger; onRun?: (r: ArmRun) => void },
): Promise<AblationResult> {
  const runs: ArmRun[] = [];
  for (let seed = 0; seed < opts.runs; seed++) {
    // Runs share one lineage store, and each warm-starts from those before it:
    // alternating which arm goes first keeps that head start off one arm.
    for (const research of seed % 2 === 0 ? [true, false] : [false, true]) {
      const events: Event[] = [];
      const t0 = Date.now();
      const outcome = await runGoal(swarm, {
        start: { goal: opts.goal, settings: opts.settings(research, seed), start: opts.start },
        log: opts.log,
        onEvent: (e) => void events.push(e),
      });
      const r = summarise(research, seed, outcome.runId, events, RUN_STATUS.name(outcome.finished.status) ?? "", (Date.now() - t0) / 1000);
      runs.push(r);
      opts.onRun?.(r);
    }
  }
  const arm = (on: boolean) => runs.filter((r) => r.research === on).sort((a, b) => a.seed - b.seed);
  const on = arm(true);
  const off = arm(false);
  const paired = (pick: (r: ArmRun) => number) => (opts.runs >= 2 ? pairedTTest(off.map(pick), on.map(pick)) : undefined);
  const briefs = on.reduce((a, r) => a + r.briefs, 0);
  return {
    goal: opts.goal.rawText,
    runs,
    meanTest: paired((r) => r.bestMean),
    ciLowTest: paired((r) => r.bestCiLow),
    adoptionRate: on.length ? on.filter((r) => r.adopted).length / on.length : 0,
    validBriefRate: briefs ? on.reduce((a, r) => a + r.validBriefs, 0) / briefs : 0,
  };
}
