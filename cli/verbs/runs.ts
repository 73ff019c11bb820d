/** runs: the workspace's runs, one line each (or JSON). */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pct } from "../../core/format.js";
import { duration } from "../../lineage-store/report.js";
import { args } from "../args.js";
import { connectOrFail, openLineage } from "../workspace.js";

/** outcome.seconds of the run's report.json, if it has one. */
function reportSeconds(runDir: string): number | undefined {
  const file = join(runDir, "report.json");
  if (!existsSync(file)) return undefined;
  const seconds = (JSON.parse(readFileSync(file, "utf8")) as { outcome?: { seconds?: unknown } }).outcome?.seconds;
  return typeof seconds === "number" ? seconds : undefined;
}

export default async function runs(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const store = await openLineage(a.workspace);
  const rows = await store.listRuns();
  await store.close();
  // A run still "running" in a workspace with no swarm up was interrupted: launch --resume continues it.
  const bus = await connectOrFail(a.workspace);
  const live = bus !== undefined;
  await bus?.close();
  const statusOf = (r: (typeof rows)[number]) => (r.status === "running" && !live ? "interrupted" : r.status || "starting");
  // The run time its report states (RunFinished.seconds, or when its launcher was interrupted);
  // without a report, until now while it runs, else until its last event, not until this listing.
  const seconds = (r: (typeof rows)[number]) => {
    const running = statusOf(r) === "running";
    const stated = running ? undefined : reportSeconds(join(resolve(a.workspace), "runs", r.run_id));
    return stated ?? ((running ? Date.now() : (r.finished_at ?? r.updated_at)) - (r.started_at ?? r.updated_at)) / 1000;
  };
  if (a.json) {
    const json = rows.map((r) => ({ run_id: r.run_id, goal: r.goal, status: statusOf(r), trials: r.trials, best_trial_id: r.best_trial_id, best_val_accuracy: r.best_score, started_at: r.started_at, seconds: seconds(r) }));
    return void process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
  if (rows.length === 0) return void process.stdout.write("no runs in this workspace\n");
  for (const r of rows) {
    const started = r.started_at ? new Date(r.started_at).toISOString().slice(0, 16).replace("T", " ") : "?";
    const best = r.best_score !== null ? `best val ${pct(r.best_score)}` : "no best yet";
    process.stdout.write(`${r.run_id}  ${statusOf(r).padEnd(16)} ${String(r.trials).padStart(4)} trials  ${best.padEnd(22)} ${started}  ${duration(seconds(r)).padStart(8)}  ${r.goal}\n`);
  }
}
