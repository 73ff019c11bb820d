/** How the product writes numbers for people: one formatter each, so a report, a console line and a page agree. */

/** A fraction as a percentage with two decimals: 0.91234 -> "91.23%"; undefined -> "?". */
export function pct(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? "?" : `${(100 * x).toFixed(2)}%`;
}

/** A difference of fractions in percentage points: 0.0123 -> "1.23 pp". */
export function pp(x: number): string {
  return `${(100 * x).toFixed(2)} pp`;
}
