/**
 * What the benchmarks read of a finished run, from its stored events (the lineage on disk): the
 * best trial by the run's rule with its interval and per-seed training time, when its last long
 * training was proposed and how long it trained, when a target was met, every confirmed trial
 * (accepted, at least two seeds: what the run's rule can call best) with when it was judged, the
 * planner's whole-run promises (agents/planner/promises.ts), and how the edits' hypotheses came
 * out by the report's rule (core/ranking.ts hypothesisOutcome), with how many were compared
 * example by example.
 *
 *   npx tsx bench/run-facts.ts WORKSPACE RUN_ID     (prints them as JSON)
 */
import { pathToFileURL } from "node:url";
import { storedEvents } from "../cli/workspace.js";
import { Decision, Verdict } from "../proto/gen/research/v1/events_pb.js";
import { bestTrial, foldRun, liveSeconds, type RunState } from "../swarm/run-state.js";
import { buildReport } from "../lineage-store/report.js";
import { rungOf, slowestSeedSeconds, valMetricOf } from "../swarm/trial-state.js";
import { runPromiseBreaks } from "../agents/planner/promises.js";

const shareStats = (xs: number[]) => (xs.length ? { seeds: xs.length, median: [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!, max: Math.max(...xs) } : null);

export async function runFacts(workspace: string, runId: string) {
  const state = foldRun(runId, await storedEvents(workspace, runId));
  const budget = state.goal?.timeBudgetS ?? 0;
  const best = bestTrial(state);
  const last = [...state.trials.values()].find((t) => t.proposed?.lastTraining);
  const met = [...state.trials.values()].find((t) => t.judged?.decision === Decision.GOAL_ACHIEVED);
  const stats = best && valMetricOf(best);
  return {
    best: best && {
      trial_id: best.id,
      hypothesis: best.proposed?.hypothesis,
      model: best.model && "name" in best.model ? best.model.name : undefined,
      seeds: stats?.n,
      val_mean: stats?.mean,
      val_ci95: stats?.ci95,
      slowest_seed_s: slowestSeedSeconds(best),
    },
    last_training: last && {
      trial_id: last.id,
      proposed_at_s: liveSeconds(state, last.firstAtMs!),
      train_seconds: last.train?.train_seconds,
      seeds: last.evaluated?.result?.seedResults.length,
      epochs: last.evaluated?.result?.seedResults.map((s) => s.epochsCompleted),
      parent: last.proposed?.parentIds[0],
    },
    goal_met_at_s: met ? liveSeconds(state, met.lastAtMs!) : null,
    confirmed: [...state.trials.values()]
      .filter((t) => t.judged?.verdict === Verdict.ACCEPT && (valMetricOf(t)?.n ?? 0) >= 2)
      .map((t) => ({ trial_id: t.id, at_s: liveSeconds(state, t.lastAtMs!), val_mean: valMetricOf(t)!.mean }))
      .sort((a, b) => a.at_s - b.at_s),
    promises_broken: runPromiseBreaks(state, 0.05 * budget),
    edits: editOutcomes(state),
    // What timing each model's inference cost its seed (issue 39: at most 5% of a probe), over the run's rung-0 probes' seeds.
    inference_share_of_probe: shareStats(
      [...state.trials.values()].flatMap((t) =>
        rungOf(t) === 0 ? (t.evaluated?.result?.seedResults ?? []).flatMap((s) => (s.inference?.measureSeconds && s.seconds ? [s.inference.measureSeconds / s.seconds] : [])) : [],
      ),
    ),
  };
}

/** The report's outcome of every edit's hypothesis, counted; none before the run has finished. */
function editOutcomes(state: RunState) {
  if (!state.runFinished) return null;
  const rows = buildReport(state, state.runFinished).json.trials.flatMap((r) => (r.hypothesis_outcome ? [{ id: r.trial_id, h: r.hypothesis_outcome }] : []));
  const outcomes = rows.map((r) => r.h);
  const count = (outcome: string) => outcomes.filter((h) => h.outcome === outcome).length;
  return {
    judged: outcomes.length,
    supported: count("supported"),
    refuted: count("refuted"),
    inconclusive: count("inconclusive"),
    paired: outcomes.filter((h) => h.paired_examples > 0).length,
    // Judged on a promotion of the edit's config and of its parent's (ASHA's or a re-test's), not on the two probes.
    above_probes: rows.filter((r) => r.h.trial_ids[0] !== r.id).length,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const [workspace, run] = process.argv.slice(2);
  if (!workspace || !run) {
    process.stderr.write("usage: npx tsx bench/run-facts.ts WORKSPACE RUN_ID\n");
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify(await runFacts(workspace, run), null, 2)}\n`);
}
