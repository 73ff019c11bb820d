/** runs: the workspace's runs, one line each (or JSON). */
import { z } from "zod";
import { readJsonFile } from "../../core/json.js";
import { join, resolve } from "node:path";
import { METRIC, type MetricName } from "../../core/enums.js";
import { formatMetric, objectiveNamed } from "../../core/objective.js";
import { duration } from "../../lineage-store/report-json.js";
import type { TrialRow } from "../../lineage-store/schema.js";
import { args } from "../args.js";
import { connectOrFail, openLineage } from "../workspace.js";

/** outcome.seconds of the run's report.json, if it has one. */
function reportSeconds(runDir: string): number | undefined {
  return readJsonFile(join(runDir, "report.json"), z.object({ outcome: z.object({ seconds: z.number() }) }))?.outcome.seconds;
}

export default async function runs(argv: string[]): Promise<void> {
  const { values: a } = args(argv, {});
  const store = await openLineage(a.workspace);
  const rows = await store.listRuns();
  // Each run's best as the judge ranks it (the pessimistic end of its interval), with what the interval counts.
  const bests = new Map<string, TrialRow | undefined>();
  for (const r of rows) if (r.best_trial_id) bests.set(r.run_id, await store.getTrial(r.best_trial_id));
  await store.close();
  const objectiveOf = (r: (typeof rows)[number]) => {
    const name = r.metric.replace(/^val_/, "");
    return objectiveNamed((METRIC.names as readonly string[]).includes(name) ? (name as MetricName) : "accuracy");
  };
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
    // Times in seconds, as every verb's JSON: started_at since the epoch, seconds of run time.
    const json = rows.map((r) => {
      const best = bests.get(r.run_id);
      return {
        run_id: r.run_id, goal: r.goal, status: statusOf(r), trials: r.trials, metric: r.metric, best_trial_id: r.best_trial_id || null, best_val_mean: r.best_score,
        best_val_ci95: best?.ci_low != null ? [best.ci_low, best.ci_high] : null, best_seeds: best?.seeds ?? null,
        started_at: r.started_at === null ? null : r.started_at / 1000, seconds: seconds(r),
      };
    });
    return void process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
  if (rows.length === 0) return void process.stdout.write("no runs in this workspace\n");
  // Local time, its zone in the header; the best is the judge's (the highest pessimistic 95% bound), shown by its validation mean.
  const zone = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(new Date()).find((p) => p.type === "timeZoneName")?.value ?? "local";
  const table = rows.map((r) => [
    r.run_id,
    statusOf(r),
    String(r.trials),
    r.best_score !== null ? bestCell(r.best_trial_id.replace(`${r.run_id}-`, ""), r.best_score, bests.get(r.run_id), objectiveOf(r)) : "none yet",
    r.started_at ? localMinute(new Date(r.started_at)) : "?",
    duration(seconds(r)),
    r.goal,
  ]);
  const header = ["RUN", "STATUS", "TRIALS", "BEST (val mean [95% CI], seeds)", `STARTED (${zone})`, "TIME", "GOAL"];
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : i === 2 || i === 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ");
  process.stdout.write(`${[header, ...table].map(line).join("\n")}\n`);
  process.stdout.write("best: the trial the judge ranks first, by the pessimistic end of its 95% interval\n");
}

/** "t013 93.48% [92.54%, 94.37%] 3 seeds": a one-seed best says so, its interval the validation set's alone. */
function bestCell(id: string, mean: number, t: TrialRow | undefined, o: ReturnType<typeof objectiveNamed>): string {
  const ci = t?.ci_low != null && t.ci_high != null ? ` [${formatMetric(o, t.ci_low)}, ${formatMetric(o, t.ci_high)}]` : "";
  const seeds = t?.seeds ? ` ${t.seeds} seed${t.seeds === 1 ? "" : "s"}` : "";
  return `${id} ${formatMetric(o, mean)}${ci}${seeds}`;
}

/** "2026-11-28 07:05" in this machine's time zone. */
function localMinute(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}
