/**
 * Markdown the report's sections share: text from users and LLMs made safe for a line or a table
 * cell, tables, and a metric with its interval.
 */
import { points } from "../core/format.js";
import { formatMetric, type Objective } from "../core/objective.js";
import type { StatsJson } from "./report-json.js";

/**
 * Text from users and LLMs must not break the page: no raw HTML, no line breaks in cells. Only
 * what could start a tag or an entity is escaped, so "0.91 >= 0.9" reads as it is written.
 */
export function inline(text: string): string {
  return text.replace(/\s+/g, " ").trim().replace(/&(?=#?\w+;)/g, "&amp;").replace(/<(?=[A-Za-z!/?])/g, "&lt;");
}

export function cell(text: string): string {
  return inline(text).replace(/\|/g, "\\|");
}

export function meanWithCi(s: StatsJson, o: Objective): string {
  const f = (v: number) => formatMetric(o, v);
  return s.ci_95 ? `${f(s.mean)} (95% CI ${f(s.ci_95[0])} – ${f(s.ci_95[1])})` : f(s.mean);
}

/** "91.20% ± 0.85" (points) for accuracy, "54.3 ± 6.1" in a regression's units. */
export function meanPlusMinus(s: StatsJson | null, o: Objective): string {
  if (!s) return "—";
  const half = s.ci_95 ? (s.ci_95[1] - s.ci_95[0]) / 2 : undefined;
  return half === undefined ? formatMetric(o, s.mean) : `${formatMetric(o, s.mean)} ± ${o.proportion ? points(half) : formatMetric(o, half)}`;
}

export function table(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)];
}
