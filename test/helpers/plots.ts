/** A report plot read as data: its series by name, before ECharts draws it. */
import type { Plot } from "../../lineage-store/plots.js";

interface Series {
  name: string;
  data: unknown[];
  markLine?: { data: { yAxis: number }[] };
}

export function series(plot: Plot, name: string): Series {
  const found = (plot.option.series as Series[]).find((s) => s.name === name);
  if (!found) throw new Error(`${plot.title}: no series "${name}"`);
  return found;
}

/** How many marks a series draws: points, bars, lines or cells. */
export const marks = (plot: Plot, name: string): number => series(plot, name).data.length;
