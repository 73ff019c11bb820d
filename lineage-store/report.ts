/**
 * The end-of-run report: one Markdown page for people, one JSON document for
 * tools, and SVG plots beside them. Built from the folded RunState only, so
 * a report can be regenerated at any time from the replayed trajectory.
 */
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { COSTS } from "../core/objective.js";
import { frontOf, tradeOffsOf } from "../swarm/front.js";
import type { RunState } from "../swarm/run-state.js";
import { metricCurves, type TrialState } from "../swarm/trial-state.js";
import type { RunFinished } from "../proto/gen/research/v1/events_pb.js";
import { confusionPlot, failuresPlot, frontPlot, learningCurvesPlot, scoresPlot, type Plot } from "./plots.js";
import type { WeightsExport } from "./weights.js";
import { chosenBest, countFailures, FRONT_PLOT, PLOT_FILES, reportJson, reportText, rowsOf, scorePoints, type ReportJson, type ReportTiming, type TrialRow } from "./report-json.js";
import { markdownOf, readable } from "./report-markdown.js";
import { classesJson, CONFUSION_PLOT } from "./report-findings.js";

let tmpCounter = 0;

/** Readers (people, `research-agent report`, a web view) never see a half-written file. */
export async function writeFileAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${tmpCounter++}.tmp`;
  try {
    await writeFile(tmp, content);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

export interface Report {
  markdown: string;
  json: ReportJson;
  /** The plots, keyed by their path relative to the run folder. */
  plots: Record<string, Plot>;
}

/** The report's page, document and plots, all drawn from one pick of the best trial and one set of rows. */
export function buildReport(state: RunState, finished: RunFinished, timing?: ReportTiming, weights?: WeightsExport): Report {
  const best = chosenBest(state, finished);
  const rows = rowsOf(state, best);
  const json = reportJson(state, finished, rows, best, timing, weights);
  return { markdown: readable(markdownOf(state, finished, json), state.runId), json, plots: plotsOf(state, best, rows) };
}

/** A Pareto goal's rung-0 trials on its metric against its first cost, the front marked; none for another goal. */
function paretoPlot(state: RunState): Record<string, Plot> {
  const f = frontOf(state);
  const cost = tradeOffsOf(state)[0];
  if (!f || !cost) return {};
  const on = new Set(f.trials.map((x) => x.t.id));
  const points = f.points.map(({ t, p }) => ({ trialId: t.id, metric: p.values[0]!, cost: p.values[1]!, onFront: on.has(t.id), knee: t === f.knee }));
  return { [FRONT_PLOT]: frontPlot(points, COSTS[cost].label, state.objective) };
}

/** The best trial's confusion matrix on validation; none for a run without classes. */
function classesPlot(best: TrialState | undefined): Record<string, Plot> {
  const c = best && classesJson(best);
  if (!c) return {};
  return { [CONFUSION_PLOT]: confusionPlot(`Confusion matrix of the best trial (${best.id}), validation, ${c.seeds} seed${c.seeds === 1 ? "" : "s"}`, c.class_names, c.confusion) };
}

function plotsOf(state: RunState, best: TrialState | undefined, rows: TrialRow[]): Record<string, Plot> {
  const o = state.objective;
  const curves = (best?.evaluated?.result?.seedResults ?? []).map((s) => ({ seed: s.seed, ...metricCurves(o, s.learningCurve) }));
  return {
    [PLOT_FILES.scores]: scoresPlot(scorePoints(rows), state.goal?.target, o),
    [PLOT_FILES.learningCurves]: learningCurvesPlot(best?.id, curves, o),
    [PLOT_FILES.failures]: failuresPlot(countFailures(rows)),
    ...paretoPlot(state),
    ...classesPlot(best),
  };
}

/**
 * Writes report.md, report.json and plots/*.svg into the run folder. Pass
 * `timing` (judged times from the events or from experiments/registry.json)
 * for the timeline to show durations; without it, it shows trial counts only.
 * `weights` is what became of the best trial's trained weights (weights.ts).
 */
export async function writeReport(runDir: string, state: RunState, finished: RunFinished, timing?: ReportTiming, weights?: WeightsExport): Promise<void> {
  const { markdown, json, plots } = buildReport(state, finished, timing, weights);
  const { renderSvg } = await import("./svg.js");
  await Promise.all([
    writeFileAtomic(join(runDir, "report.md"), markdown),
    writeFileAtomic(join(runDir, "report.json"), reportText(json, state.objective)),
    ...Object.entries(plots).map(([rel, plot]) => writeFileAtomic(join(runDir, rel), renderSvg(plot))),
  ]);
}
