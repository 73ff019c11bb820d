/** What the CLI tests read of a launch: its --json summary line and the report.json beside its report. */
import { readFileSync } from "node:fs";
import type { MetricName } from "../../core/enums.js";
import { liveSeconds, type RunState } from "../../swarm/run-state.js";

/** A trial's row in report.json: the run's metric under its key (`val_accuracy`, `val_rmse`, ...). */
export type ReportTrial = {
  trial_id: string;
  verdict: string | null;
  num_seeds: number | null;
  best: boolean;
} & { [K in `val_${MetricName}`]?: { mean: number; ci_95: [number, number] | null } | null };

export interface LaunchSummary {
  run_id: string;
  status: string;
  metric: string;
  best_trial: Record<string, number | string | number[]> | null;
  report: string;
  registry: string;
}

/** The last line of a `launch --json`'s stdout. */
export const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split("\n").pop()!) as LaunchSummary;

/** The report.json of a summary's run. */
export const reportOf = (s: LaunchSummary) => JSON.parse(readFileSync(s.report.replace(/\.md$/, ".json"), "utf8")) as { trials: ReportTrial[]; outcome: { best_rule: string } };

/**
 * A run's trials a line each, for an assertion's message: when a launch under the suite's load
 * ends otherwise than a test expects, what each trial did and when says why.
 */
export function trialLines(state: RunState): string {
  // On the run's clock: a resumed run's downtime is not in it.
  const at = (ms: number | undefined) => (ms === undefined ? "?" : liveSeconds(state, ms).toFixed(0));
  const lines = state.order.map((id) => {
    const t = state.trials.get(id)!;
    const seeds = t.evaluated?.result?.seedResults.map((s) => s.seconds.toFixed(1)).join("/") ?? "-";
    const fidelity = `rung ${t.proposed?.rung ?? 0} subset ${t.train?.subset ?? "-"}${t.proposed?.lastTraining ? " last" : ""}`;
    return `${id} ${at(t.firstAtMs)}-${at(t.lastAtMs)} s, ${fidelity}, seeds ${seeds} s: ${t.judged?.reason ?? t.evaluated?.failure?.message ?? "not judged"}`;
  });
  return [...lines, `run: ${state.runFinished?.reason ?? "not finished"}`].join("\n");
}
