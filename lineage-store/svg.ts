/**
 * A report plot drawn to an SVG file by ECharts' server-side renderer: no DOM, no scripts and the
 * generic sans-serif family, so a file renders the same in a browser, a Markdown viewer or a CI
 * artifact page. Its own module, imported when a report is first written: the library is a third
 * of the lineage store's bundle (1.6 MB, 0.17 s to load), and nothing else there needs it.
 */
import * as echarts from "echarts/core";
import { BarChart, CustomChart, LineChart, ScatterChart } from "echarts/charts";
import { GridComponent, LegendComponent, MarkLineComponent, TitleComponent } from "echarts/components";
import { SVGRenderer } from "echarts/renderers";
import { INK, PLOT_HEIGHT, PLOT_WIDTH, type Plot } from "./plots.js";

echarts.use([BarChart, CustomChart, LineChart, ScatterChart, GridComponent, LegendComponent, MarkLineComponent, TitleComponent, SVGRenderer]);

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

/**
 * The file: the option drawn at the plot's size under its title, which is also the SVG's own (a
 * browser tab, a screen reader); an option's own titles (a message) go below it.
 */
export function renderSvg({ title, option }: Plot): string {
  const chart = echarts.init(null, null, { renderer: "svg", ssr: true, width: PLOT_WIDTH, height: PLOT_HEIGHT });
  try {
    const heading = { text: title, left: "center", top: 8, textStyle: { fontSize: 15, color: INK } };
    chart.setOption({ animation: false, backgroundColor: "#fff", textStyle: { fontFamily: "sans-serif", fontSize: 12 }, ...option, title: [heading, ...[option.title ?? []].flat()] });
    const svg = chart.renderToSVGString().replace(/^<svg[^>]*>/, (open) => `${open}<title>${escapeXml(title)}</title>`);
    // The renderer names its styles and clip paths by counters that run across plots (zr0-cls-3,
    // zr1-c0): renamed in order of appearance, a file's bytes are a function of its plot alone,
    // so a replayed run rewrites the same files.
    const ids = new Map<string, string>();
    const rename = (id: string) => ids.get(id) ?? ids.set(id, `p${ids.size}`).get(id)!;
    return `${svg.replace(/\bzr\d+-(?:cls-|c)\d+\b/g, rename)}\n`;
  } finally {
    chart.dispose();
  }
}
