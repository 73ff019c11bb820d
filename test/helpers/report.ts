/** What the CLI tests read of a launch: its --json summary line and the report.json beside its report. */
import { readFileSync } from "node:fs";

/** A trial's row in report.json; `val_accuracy` holds the run's metric, whichever it is. */
export interface ReportTrial {
  trial_id: string;
  verdict: string | null;
  num_seeds: number | null;
  val_accuracy: { mean: number; ci_95: [number, number] | null } | null;
  best: boolean;
}

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
