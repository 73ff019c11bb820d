/**
 * The report's plots: each an ECharts option built from the report's rows, a pure function the
 * tests read as data, drawn to an SVG file by svg.ts. The files are pictures only: a trial's
 * numbers are in the report's tables beside them.
 */
import type { EChartsCoreOption } from "echarts/core";
import { int, points as inPoints } from "../core/format.js";
import { ACCURACY, formatMetric, type Objective } from "../core/objective.js";

export type PlotOption = EChartsCoreOption;
/** A plot before it is drawn: what the tests read. */
export interface Plot {
  title: string;
  option: PlotOption;
}

export const PLOT_WIDTH = 720;
export const PLOT_HEIGHT = 360;
export const INK = "#222";

const ACCEPTED = "#1f77b4";
const REJECTED = "#8c8c8c";
const BEST = "#e69f00";
const FAILED = "#d62728";
const SEED_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
/** A filled X: a symbol is filled, not stroked. */
const CROSS = "path://M2 0L5 3L8 0L10 2L7 5L10 8L8 10L5 7L2 10L0 8L3 5L0 2Z";
const SOLID = "path://M0 0H16V2H0Z";
const DASHED = "path://M0 0H4V2H0ZM6 0H10V2H6ZM12 0H16V2H12Z";

/** The legend under the title, right-aligned, and the plot's grid below both. */
const framed = (legend: (string | { name: string; icon: string })[]): PlotOption => ({
  legend: { data: legend, right: 20, top: 32, itemWidth: 16, itemHeight: 10, textStyle: { color: INK } },
  grid: { left: 72, right: 24, top: 64, bottom: 52 },
});

/** A plot with nothing to draw: why, in the middle. */
const noData = (message: string): PlotOption => ({ series: [], title: { text: message, left: "center", top: "middle", textStyle: { fontSize: 14, color: "#666", fontWeight: "normal" } } });

/** The metric's axis: percentages for a proportion, with as many decimals as its span needs. */
function metricAxis(o: Objective, name: string, span: number) {
  const decimals = Math.max(0, Math.min(3, Math.ceil(-Math.log10(((span || 0.01) / 5) * 100))));
  return {
    type: "value",
    scale: true,
    name,
    nameLocation: "middle",
    nameGap: 52,
    axisLabel: { formatter: (v: number) => (o.proportion ? `${inPoints(v, decimals)}%` : String(Number(v.toPrecision(6)))) },
  };
}

/** What a custom series' item is drawn with: its values, and their place on the plot. */
type Api = { value: (i: number) => number; coord: (v: number[]) => number[] };

/**
 * A custom series' item: whiskers from (x, lo) to (x, hi), with caps, or where `across` (a Pareto
 * plot's cost interval) with a second whisker from (xlo, y) to (xhi, y): values [x, lo, hi] or
 * [x, lo, hi, xlo, y, xhi].
 */
function whiskers(colours: string[], width: number, across = false) {
  return (params: { dataIndex: number }, api: Api) => {
    const style = { stroke: colours[params.dataIndex], lineWidth: width };
    const line = (a: number[], b: number[]) => ({ type: "line", shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style });
    const [lo, hi] = [api.coord([api.value(0), api.value(1)]), api.coord([api.value(0), api.value(2)])] as [number[], number[]];
    const cap = (end: number[]) => line([end[0]! - 4, end[1]!], [end[0]! + 4, end[1]!]);
    const second = across ? [line(api.coord([api.value(3), api.value(4)]), api.coord([api.value(5), api.value(4)]))] : [cap(lo), cap(hi)];
    return { type: "group", children: [line(lo, hi), ...second] };
  };
}

/** A scatter series of points [x, y] in one colour; `extra` its symbol where it is not a dot. */
const scatter = (name: string, color: string, data: number[][], extra = {}) => ({ name, type: "scatter", symbolSize: 8, itemStyle: { color }, data, ...extra });
/** A ring drawn around points: its white middle first, the dots on top of it. */
const ring = (color: string, size: number) => ({ symbol: "emptyCircle", symbolSize: size, itemStyle: { color, borderWidth: 2 } });

export interface ScorePoint {
  trialId: string;
  /** Absent when the trial produced no result (it failed before or during evaluation). */
  mean?: number;
  ci95?: readonly [number, number];
  accepted: boolean;
  best: boolean;
  failure?: string;
}

/** A seed's curves of the run's metric: validation, and training where it is measured (accuracy). */
export interface SeedCurve {
  seed: number;
  val: readonly number[];
  train: readonly number[];
}

/**
 * The run's validation metric per trial (mean, 95% CI whiskers), in the order given: accepted
 * blue, rejected grey, the best orange and ringed; trials without a score are red crosses below
 * the lowest whisker; the target a dashed line.
 */
export function scoresPlot(points: readonly ScorePoint[], target?: number, o: Objective = ACCURACY): Plot {
  const title = `Validation ${o.label} per trial (mean, 95% CI${o.higherIsBetter ? "" : "; lower is better"})`;
  if (points.length === 0) return { title, option: noData("no trials yet") };
  const scored = points.flatMap((p, i) => (p.mean === undefined ? [] : [{ p, i, ci: p.ci95 ?? [p.mean, p.mean] }]));
  const values = [...scored.flatMap((s) => s.ci), ...(target ? [target] : [])];
  const [lo, hi] = values.length ? [Math.min(...values), Math.max(...values)] : [0, 1];
  const floor = lo - Math.max(hi - lo, 0.01) * 0.12;
  const dots = (keep: (p: ScorePoint) => boolean) => scored.filter((s) => keep(s.p)).map((s) => [s.i, s.p.mean!]);
  const colourOf = (p: ScorePoint) => (p.best ? BEST : p.accepted ? ACCEPTED : REJECTED);
  const option = {
    ...framed(["accepted", "rejected", "best", "failed"]),
    // Each trial by its number in the run (t014), as the report's text names it.
    xAxis: { type: "category", data: points.map((p) => p.trialId.slice(p.trialId.lastIndexOf("-") + 1)), name: "trial (proposal order)", nameLocation: "middle", nameGap: 30, axisTick: { alignWithLabel: true } },
    yAxis: metricAxis(o, `validation ${o.label}`, hi - floor),
    series: [
      {
        name: "95% CI",
        type: "custom",
        renderItem: whiskers(scored.map((s) => colourOf(s.p)), 1.5),
        data: scored.map((s) => [s.i, s.ci[0], s.ci[1]]),
        encode: { x: 0, y: [1, 2] },
        ...(target && {
          markLine: { silent: true, symbol: "none", lineStyle: { color: FAILED, type: "dashed", width: 1.5 }, label: { position: "insideStartTop", color: FAILED, formatter: `target ${formatMetric(o, target)}` }, data: [{ yAxis: target }] },
        }),
      },
      scatter("best ring", BEST, dots((p) => p.best), ring(BEST, 18)),
      scatter("accepted", ACCEPTED, dots((p) => p.accepted && !p.best)),
      scatter("rejected", REJECTED, dots((p) => !p.accepted && !p.best)),
      scatter("best", BEST, dots((p) => p.best)),
      scatter("failed", FAILED, points.flatMap((p, i) => (p.mean === undefined ? [[i, floor]] : [])), { symbol: CROSS, symbolSize: 10 }),
    ],
  };
  return { title, option };
}

/** Per-seed validation (solid) and train (dashed) metric per epoch of one trial. */
export function learningCurvesPlot(trialId: string | undefined, seeds: readonly SeedCurve[], o: Objective = ACCURACY): Plot {
  const title = trialId ? `Learning curves of the best trial (${trialId})` : "Learning curves of the best trial";
  const curves = seeds.filter((c) => c.val.length || c.train.length);
  if (!curves.length) return { title, option: noData(trialId ? "no learning curves recorded" : "no accepted trial") };
  const epochs = Math.max(...curves.map((c) => Math.max(c.val.length, c.train.length)));
  const values = curves.flatMap((c) => [...c.val, ...c.train]);
  const colourOf = (k: number) => SEED_COLORS[k % SEED_COLORS.length]!;
  const line = (name: string, vs: readonly number[], color: string, dashed: boolean) => ({
    name,
    type: "line",
    data: [...vs],
    symbol: "circle",
    symbolSize: dashed ? 4 : 6,
    itemStyle: { color },
    lineStyle: { color, width: 2, ...(dashed && { type: "dashed", opacity: 0.75 }) },
  });
  // Past six seeds the legend would run into the title; the colours still tell them apart.
  const named = curves.length <= 6 ? curves.map((c) => `seed ${c.seed}`) : [];
  const option = {
    // The line styles' keys drawn as lines, solid and dashed, where a line series' own key is a dot on a line.
    ...framed([...named, { name: "validation", icon: SOLID }, { name: "train", icon: DASHED }]),
    xAxis: { type: "category", data: Array.from({ length: epochs }, (_, e) => String(e + 1)), name: "epoch", nameLocation: "middle", nameGap: 30, boundaryGap: false },
    yAxis: metricAxis(o, o.label, Math.max(...values) - Math.min(...values)),
    series: [
      ...curves.flatMap((c, k) => [line(`seed ${c.seed}`, c.val, colourOf(k), false), line(`seed ${c.seed} train`, c.train, colourOf(k), true)]),
      // The legend's keys to the two line styles.
      line("validation", [], INK, false),
      line("train", [], INK, true),
    ],
  };
  return { title, option };
}

/** Horizontal bars, one per failure label, longest first. */
export function failuresPlot(counts: Readonly<Record<string, number>>): Plot {
  const title = "Failures by label";
  const rows = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (!rows.length) return { title, option: noData("no failures") };
  const option = {
    grid: { left: 150, right: 48, top: 44, bottom: 52 },
    xAxis: { type: "value", minInterval: 1, name: "trials", nameLocation: "middle", nameGap: 30 },
    yAxis: { type: "category", inverse: true, data: rows.map(([label]) => label) },
    series: [{ name: "failures", type: "bar", barMaxWidth: 32, itemStyle: { color: FAILED, opacity: 0.85 }, label: { show: true, position: "right", fontWeight: "bold", color: INK }, data: rows.map(([, n]) => n) }],
  };
  return { title, option };
}

/** One trial on a Pareto plot: its metric and one cost, each a mean with its interval. */
export interface FrontPoint {
  trialId: string;
  metric: { mean: number; low: number; high: number };
  cost: { mean: number; low: number; high: number };
  onFront: boolean;
  knee: boolean;
}

/**
 * A Pareto goal's trials on its metric (up) against one cost (across, on a log scale: parameters
 * and latency span orders of magnitude), each with its intervals as whiskers; the front's trials
 * are joined in cost order, dominated ones grey, the knee ringed.
 */
export function frontPlot(points: readonly FrontPoint[], costLabel: string, o: Objective = ACCURACY): Plot {
  const title = `Pareto front: validation ${o.label} against ${costLabel} (95% CI whiskers)`;
  const usable = points.filter((p) => p.cost.low > 0);
  if (!usable.length) return { title, option: noData("no trial on the front yet") };
  const metrics = usable.flatMap((p) => [p.metric.low, p.metric.high]);
  const front = usable.filter((p) => p.onFront).sort((a, b) => a.cost.mean - b.cost.mean);
  const dots = (keep: (p: FrontPoint) => boolean) => usable.filter(keep).map((p) => [p.cost.mean, p.metric.mean]);
  const option = {
    ...framed(["on the front", "dominated", "knee"]),
    xAxis: { type: "log", name: `${costLabel} (log scale)`, nameLocation: "middle", nameGap: 30, axisLabel: { formatter: (v: number) => int(Number(v.toPrecision(3))) } },
    yAxis: metricAxis(o, `validation ${o.label}`, Math.max(...metrics) - Math.min(...metrics)),
    series: [
      {
        name: "95% CI",
        type: "custom",
        renderItem: whiskers(usable.map((p) => (p.onFront ? BEST : REJECTED)), 1.2, true),
        data: usable.map((p) => [p.cost.mean, p.metric.low, p.metric.high, p.cost.low, p.metric.mean, p.cost.high]),
        encode: { x: [0, 3, 5], y: [1, 2, 4] },
      },
      { name: "front", type: "line", symbol: "none", lineStyle: { color: BEST, width: 1.5 }, data: front.length > 1 ? front.map((p) => [p.cost.mean, p.metric.mean]) : [] },
      scatter("knee", ACCEPTED, dots((p) => p.knee), ring(ACCEPTED, 16)),
      scatter("on the front", BEST, dots((p) => p.onFront)),
      scatter("dominated", REJECTED, dots((p) => !p.onFront)),
    ],
  };
  return { title, option };
}

/** Past this many classes the cells are too small to read: the report's table says it instead. */
const MAX_CONFUSION_CLASSES = 40;

/**
 * A confusion matrix as shares of each true class (a row sums to 100%): true classes down,
 * predictions across, right answers blue and mistakes red, each cell shaded by the square root
 * of its share (a 1% mistake stays visible) and, while the cells are wide enough, labelled with it.
 */
export function confusionPlot(title: string, names: readonly string[], counts: readonly (readonly number[])[]): Plot {
  const k = counts.length;
  if (!k) return { title, option: noData("no confusion matrix recorded") };
  if (k > MAX_CONFUSION_CLASSES) return { title, option: noData(`${k} classes: too many to draw (the report's table lists each)`) };
  const label = (s: string) => (s.length > 18 ? `${s.slice(0, 17)}…` : s);
  const classes = Array.from({ length: k }, (_, i) => label(names[i] ?? String(i)));
  const cells = counts.flatMap((row, i) => {
    const total = row.reduce((a, b) => a + b, 0);
    return classes.map((_, j) => [j, i, total ? (row[j] ?? 0) / total : 0]);
  });
  const side = Math.min((PLOT_HEIGHT - 44 - 86) / k, (PLOT_WIDTH - 300) / k);
  const renderCell = (_: unknown, api: Api) => {
    const [j, i, share] = [api.value(0), api.value(1), api.value(2)];
    const [x, y] = api.coord([j, i]) as [number, number];
    const cell = { type: "rect", shape: { x: x - side / 2, y: y - side / 2, width: side, height: side }, style: { fill: i === j ? ACCEPTED : FAILED, opacity: Math.round(Math.sqrt(share) * 100) / 100, stroke: "#e4e4e4" } };
    if (side < 22 || share <= 0) return cell;
    const shown = { type: "text", style: { x, y, text: share < 0.005 ? "<1" : `${Math.round(share * 100)}`, align: "center", verticalAlign: "middle", fontSize: 10, fill: share > 0.5 ? "#fff" : INK } };
    return { type: "group", children: [cell, shown] };
  };
  const width = side * k;
  const option = {
    grid: { left: (PLOT_WIDTH - width) / 2 + 40, width, top: 44, height: side * k },
    xAxis: { type: "category", data: classes, name: "predicted\n(% of the\ntrue class)", nameLocation: "end", nameGap: 8, axisLabel: { rotate: 45, fontSize: 11 }, axisTick: { show: false } },
    yAxis: { type: "category", data: classes, inverse: true, name: "true class", nameLocation: "middle", nameGap: 16 + 7 * Math.max(...classes.map((c) => c.length)), axisTick: { show: false } },
    series: [{ name: "cells", type: "custom", renderItem: renderCell, data: cells }],
  };
  return { title, option };
}
