/** launch: a research run on a swarm started for it, its events on the console, its outcome at the end. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RUN_STATUS } from "../../core/enums.js";
import { gainPp, pct } from "../../core/format.js";
import { baselineComparison } from "../../lineage-store/baseline.js";
import { frontJson, limitsJson } from "../../lineage-store/report-json.js";
import { latencyOf } from "../../swarm/front.js";
import { parseDuration } from "../../core/goal-words.js";
import { intervalBasis } from "../../core/ranking.js";
import type { runGoal } from "../../deploy/swarm.js";
import { RunStatus } from "../../proto/gen/research/v1/events_pb.js";
import { standing, valMetricOf } from "../../swarm/trial-state.js";
import { formatMetric } from "../../core/objective.js";
import { args, EXIT, fail } from "../args.js";
import { describeEvent } from "../event-line.js";
import { ensureExportPython, FollowingWriter, isUri, writableFolder } from "../export-writer.js";
import { sayer, SIGNAL_EXIT, withSwarm, writeInterruptedReport } from "../swarm-run.js";
import { prepareRun, RUN_FLAGS, withGoalDocument } from "../run-flags.js";

type Outcome = Awaited<ReturnType<typeof runGoal>>;

/** The run's outcome: one JSON document with --json, else lines for people. */
function printOutcome(outcome: Outcome, json: boolean | undefined, say: (line: string) => void): void {
  const { finished } = outcome;
  const best = outcome.state.trials.get(finished.bestTrialId);
  const o = outcome.state.objective;
  const acc = best && valMetricOf(best);
  const test = finished.testResult?.aggregated[`test_${o.metric}`];
  const ensemble = finished.testResult?.aggregated[`ensemble_test_${o.metric}`];
  const show = (v: number) => formatMetric(o, v);
  const openEnded = outcome.state.goal?.openEnded ?? false;
  const baseline = baselineComparison(outcome.state, best, finished.testResult);
  if (json) {
    process.stdout.write(
      `${JSON.stringify({
        run_id: outcome.runId,
        open_ended: openEnded,
        metric: o.key,
        status: RUN_STATUS.name(finished.status) ?? "",
        reason: finished.reason,
        trials: finished.trials,
        seconds: finished.seconds,
        best_trial: best
          ? {
              trial_id: best.id,
              [o.key]: acc?.mean,
              ci_95: acc?.ci95,
              params: Number(best.evaluated?.result?.params ?? 0),
              latency_ms: latencyOf(best)?.mean,
              [`test_${o.metric}`]: test?.mean,
              [`ensemble_test_${o.metric}`]: ensemble?.mean,
              test_skipped: finished.testSkipped || undefined,
            }
          : null,
        // A Pareto goal's front (report.json's front): each trial's objectives with their intervals, and the knee.
        front: frontJson(outcome.state, finished) ?? undefined,
        // A latency limit's outcome (report.json's limits): the trials within and over it, the best within and the latency it was held to.
        limits: limitsJson(outcome.state, best) ?? undefined,
        baseline: baseline && { trial_id: baseline.baseline_trial_id, val_accuracy: baseline.baseline_val_mean, test_accuracy: baseline.baseline_test_mean, val_gain: baseline.val, test_gain: baseline.test },
        report: finished.reportPath,
        registry: finished.registryPath,
      })}\n`,
    );
    return;
  }
  say(`status: ${RUN_STATUS.name(finished.status) ?? ""} after ${finished.trials} trials`);
  if (openEnded) say(`no target was set: ${best && acc ? "the best model found follows, not a goal met or missed" : "no model was accepted"}`);
  if (best && acc) {
    say(`best${openEnded ? " model" : ""}: ${best.id} val ${o.proportion ? "" : `${o.label} `}${show(acc.mean)} 95% CI [${show(acc.ci95[0]!)}, ${show(acc.ci95[1]!)}] over ${intervalBasis(standing(best)!)}${test ? `, test ${show(test.mean)}${ensemble ? ` per seed, ${show(ensemble.mean)} as an ensemble of its seeds` : ""} (measured once on the test split)` : ""}`);
    if (finished.testSkipped) say(`test accuracy not measured: ${finished.testSkipped}`);
  }
  if (baseline) {
    const gain = (g: typeof baseline.val) => (g ? `${gainPp(g.gain)} (95% CI ${gainPp(g.ci_95[0])} to ${gainPp(g.ci_95[1])}, ${g.seeds.length} seeds paired)` : "not compared");
    say(
      baseline.best_trial_id && baseline.best_trial_id !== baseline.baseline_trial_id
        ? `against trial 0 (${baseline.origin}, val ${pct(baseline.baseline_val_mean ?? undefined)}, test ${pct(baseline.baseline_test_mean ?? undefined)}): validation ${gain(baseline.val)}, test ${gain(baseline.test)}`
        : `trial 0 (${baseline.origin}) stays the best model: no trial beat it`,
    );
  }
  say(`report: ${finished.reportPath}`);
  say(`registry: ${finished.registryPath}`);
}

/** --export FORMAT:DIR, checked before anything starts: only TensorBoard follows a run as it goes. */
function liveExportFolder(spec: string): string {
  const at = spec.indexOf(":");
  const [format, dest] = at < 0 ? [spec, ""] : [spec.slice(0, at), spec.slice(at + 1)];
  if (format !== "tensorboard") fail(`--export: only tensorboard follows a run live (--export tensorboard:DIR), got "${spec}"; research-agent export writes mlflow and wandb after the run`);
  if (!dest || isUri(dest)) fail(`--export tensorboard:DIR needs a folder, got "${spec}"`);
  return writableFolder(dest, "--export: ");
}

export default async function launch(argv: string[]): Promise<void> {
  const a = withGoalDocument(args(argv, { ...RUN_FLAGS, export: { type: "string" }, quiet: { type: "boolean", short: "q" } }).values);
  const run = prepareRun(a);
  const live = a.export === undefined ? undefined : liveExportFolder(a.export);
  const say = sayer(a.json);
  // Its first install takes a minute or two: before the run's clock starts, not during it.
  if (live) await ensureExportPython();
  await withSwarm(a, run, say, async (swarm, interrupt, log) => {
    const [{ runGoal }, { buildReport }, { judgedLine, exportRun }] = await Promise.all([
      import("../../deploy/swarm.js"),
      import("../../lineage-store/report.js"),
      import("../../lineage-store/export.js"),
    ]);
    // A failed live export is said once; the run goes on without it.
    const follower = live && new FollowingWriter("tensorboard", live, (f) => say(`live export to ${live} stopped [${f.label}]: ${f.message}`));
    const outcome = await runGoal(swarm, {
      start: run.goal ? { goal: run.goal, settings: run.settings(swarm, !a["no-research"]), start: run.start?.point } : undefined,
      runId: a.resume,
      resume: !!a.resume,
      timeBudgetS: a.resume && a["time-budget"] ? parseDuration(a["time-budget"]) : undefined,
      signal: interrupt,
      log,
      onEvent: (e, s) => {
        const line = !a.quiet && describeEvent(e, s);
        if (line) say(line, e.body.case === "trialProgress");
        const t = e.body.case === "trialJudged" ? s.trials.get(e.trialId) : undefined;
        if (follower && t) follower.send(judgedLine(s, t));
      },
    });
    if (outcome.interrupted) await writeInterruptedReport(run.workspace, outcome);
    if (follower) {
      const path = outcome.finished.reportPath;
      const report = path && existsSync(path) ? readFileSync(path, "utf8") : buildReport(outcome.state, outcome.finished).markdown;
      follower.send({ run: exportRun(outcome.state, report) });
      if (!(await follower.close())) say(`tensorboard: ${join(live!, outcome.runId)} (tensorboard --logdir ${live})`);
    }
    printOutcome(outcome, a.json, say);
    if (outcome.interrupted) return SIGNAL_EXIT[String(interrupt.reason)] ?? 130;
    return outcome.finished.status === RunStatus.GOAL_ACHIEVED || outcome.finished.status === RunStatus.COMPLETED ? EXIT.ok : EXIT.budgetSpent;
  }, true);
}
