/** How numbers, times and intervals read on every page. */
import { int } from "../../core/format";
import { formatMetric, objectiveNamed, type Objective } from "../../core/objective";
import type { Interval, ObjectiveJson } from "../api";

export type { Objective };

/** The run's objective from its JSON: the metric's facts come from core/objective.ts, as on the server. */
export const objectiveOf = (o: ObjectiveJson): Objective => objectiveNamed(o.metric);

export const pct = (x: number | null | undefined, digits = 2) => (x == null || Number.isNaN(x) ? "–" : `${(x * 100).toFixed(digits)}%`);

/** A difference of fractions in percentage points, signed: 0.0117 -> "+1.17 pp". */
const gainPp = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(2)} pp`;

/** A value of the metric where the column or the sentence names it: a percentage with `digits` decimals for a proportion, else four significant digits. */
export const bare = (o: Objective, x: number | null | undefined, digits = 2) => (x == null || Number.isNaN(x) ? "–" : o.proportion ? pct(x, digits) : formatMetric(o, x));

/** A value of the metric on its own: a proportion's percentage says what it is; any other metric's number needs its name, "RMSE 54.71". */
export function metric(o: Objective, x: number | null | undefined, digits = 2): string {
  const text = bare(o, x, digits);
  return o.proportion || text === "–" ? text : `${o.label} ${text}`;
}

/** A signed change of the metric: percentage points for a proportion, else in its units: "+1.17 pp", "−2.31". */
export const gain = (o: Objective, x: number) => (o.proportion ? gainPp(x) : `${x >= 0 ? "+" : "−"}${formatMetric(o, Math.abs(x))}`);

/** An interval's mean and bounds: "91.07% [90.0%, 92.0%]", "RMSE 54.71 [53.1, 56.2]". */
export const span = (o: Objective, v: Interval) => `${metric(o, v.mean)} [${bare(o, v.ci95[0], 1)}, ${bare(o, v.ci95[1], 1)}]`;

/** An interval with what it counts: "91.07% [90.0%, 92.0%] (3 × 6,000)", seeds × examples a seed; "RMSE 54.71 [53.1, 56.2] (2 seeds)". */
export const ci = (o: Objective, v: Interval | null | undefined) =>
  v ? `${span(o, v)} (${v.n}${v.examples ? ` × ${int(v.examples)}` : ` seed${v.n === 1 ? "" : "s"}`})` : "–";

/** Tick values in a few characters, so neighbouring axes' labels keep apart: 30k, 5e-4, 0.25. */
export function tick(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e3) return count(v).replace(".0", "");
  if (a > 0 && a < 0.01) return Number(v.toPrecision(2)).toExponential();
  return String(Number(v.toPrecision(3)));
}

/** An axis's labels for the metric: a percentage with `digits` decimals for a proportion, a short number otherwise. */
export const metricTick = (o: Objective, digits: number) => (v: number) => (o.proportion ? pct(v, digits) : tick(v));

/** The metric's name, capitalised for a title: "Accuracy", "RMSE". */
export const title = (o: Objective) => o.label.charAt(0).toUpperCase() + o.label.slice(1);

export function duration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return "–";
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(Math.round(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export const when = (ms: number | null | undefined) => (ms ? new Date(ms).toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" }) : "–");

export function count(n: number | null | undefined): string {
  if (n == null) return "–";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Trial ids are `<run>-tNNN`: the short part is what people read. */
export const shortId = (trialId: string) => trialId.slice(trialId.lastIndexOf("-") + 1);

/** Text for ECharts' HTML tooltips, whose string formatters also expand {a}-style templates. */
export const esc = (s: string) => s.replace(/[&<>{}"]/g, (c) => `&#${c.charCodeAt(0)};`);

export const pretty = (v: unknown) => (v === undefined || v === null ? "" : JSON.stringify(v, null, 2));

/** One colour per outcome, shared by the tree, badges and bars. */
export function outcomeColor(verdict: string | null, failure: string | null, status?: string): string {
  if (failure === "pruned") return "#b08d2f";
  if (failure) return "#c0392b";
  if (verdict === "accept") return "#2e8b57";
  if (verdict === "reject") return "#7f8c8d";
  if (verdict === "illegal") return "#8e44ad";
  return status === "proposed" || status === "assembled" ? "#2f6fb0" : "#95a5a6";
}
