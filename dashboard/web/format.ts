/** How numbers, times and intervals read on every page. */
import type { Interval } from "../api";

export const pct = (x: number | null | undefined, digits = 2) => (x == null || Number.isNaN(x) ? "–" : `${(x * 100).toFixed(digits)}%`);

/** A difference of fractions in percentage points, signed: 0.0117 -> "+1.17 pp". */
export const gainPp = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(2)} pp`;

/** An interval with what it counts: "91.07% [90.0%, 92.0%] (3 × 6,000)", seeds × examples a seed. */
export const ci = (v: Interval | null | undefined) =>
  v ? `${pct(v.mean)} [${pct(v.ci95[0], 1)}, ${pct(v.ci95[1], 1)}] (${v.n}${v.examples ? ` × ${v.examples.toLocaleString("en-US")}` : ` seed${v.n === 1 ? "" : "s"}`})` : "–";

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
