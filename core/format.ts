/** How the product writes numbers for people: one formatter each, so a report, a console line and a page agree. */

/** Words as a list that ends in "or": ["rmse", "mae", "r2"] -> "rmse, mae or r2". */
export function orList(words: readonly string[]): string {
  return words.length > 1 ? `${words.slice(0, -1).join(", ")} or ${words.at(-1)}` : (words[0] ?? "");
}

/** A count with thousands separators: 170218 -> "170,218". */
export function int(n: number | bigint): string {
  return n.toLocaleString("en-US");
}

/** A fraction as a percentage with two decimals: 0.91234 -> "91.23%"; undefined -> "?". */
export function pct(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? "?" : `${points(x)}%`;
}

/** A difference of fractions in percentage points: 0.0123 -> "1.23 pp". */
export function pp(x: number): string {
  return `${points(x)} pp`;
}

/** A fraction as a number of percentage points, where the sentence or the column names the unit: 0.0123 -> "1.23". */
export function points(x: number, decimals = 2): string {
  return (100 * x).toFixed(decimals);
}

/** A signed change in percentage points: 0.0123 -> "+1.23 pp", -0.004 -> "-0.40 pp". */
export function gainPp(x: number): string {
  return `${x >= 0 ? "+" : ""}${pp(x)}`;
}

/** Runner jobs as a person reads them (a RunnerJobs event): "1 of 2 up, 1 pending (Resources), 1 ended". */
export function jobsText(j: { requested: number; pending: number; starting: number; up: number; ended: number; waiting: string }): string {
  const parts = [`${j.up} of ${j.requested} up`];
  if (j.starting) parts.push(`${j.starting} starting`);
  if (j.pending) parts.push(`${j.pending} pending${j.waiting ? ` (${j.waiting})` : ""}`);
  if (j.ended) parts.push(`${j.ended} ended`);
  return parts.join(", ");
}
