/**
 * ECharts, with only the charts and components the pages use registered
 * (the full build is several times the size). SVG rendering: crisp at any
 * zoom, and the tests can count the drawn nodes.
 */
import { useEffect, useRef } from "preact/hooks";
import * as echarts from "echarts/core";
import { BarChart, CustomChart, HeatmapChart, LineChart, ParallelChart, ScatterChart, TreeChart } from "echarts/charts";
import { GridComponent, LegendComponent, MarkLineComponent, ParallelComponent, TooltipComponent, VisualMapComponent } from "echarts/components";
import { SVGRenderer } from "echarts/renderers";

echarts.use([
  BarChart,
  CustomChart,
  HeatmapChart,
  LineChart,
  ParallelChart,
  ScatterChart,
  TreeChart,
  GridComponent,
  LegendComponent,
  MarkLineComponent,
  ParallelComponent,
  TooltipComponent,
  VisualMapComponent,
  SVGRenderer,
]);

export type Option = echarts.EChartsCoreOption;
export interface ChartClick {
  data?: unknown;
  dataIndex: number;
  seriesIndex?: number;
}

/** Shared look: small type, tight grid. */
const base: Option = {
  animationDuration: 300,
  textStyle: { fontFamily: "system-ui, sans-serif", fontSize: 11 },
  grid: { left: 48, right: 16, top: 28, bottom: 32 },
  tooltip: { trigger: "item", confine: true },
};

export function Chart({ option, height = 240, testid, onClick, onDblClick }: { option: Option; height?: number; testid?: string; onClick?: (p: ChartClick) => void; onDblClick?: (p: ChartClick) => void }) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const drawn = useRef("");
  const click = useRef(onClick);
  click.current = onClick;
  const dblclick = useRef(onDblClick);
  dblclick.current = onDblClick;

  useEffect(() => {
    const c = echarts.init(el.current!, undefined, { renderer: "svg" });
    chart.current = c;
    c.on("click", (p) => click.current?.(p as unknown as ChartClick));
    c.on("dblclick", (p) => dblclick.current?.(p as unknown as ChartClick));
    const resize = new ResizeObserver(() => c.resize());
    resize.observe(el.current!);
    return () => {
      resize.disconnect();
      c.dispose();
      chart.current = null;
      drawn.current = "";
    };
  }, []);

  useEffect(() => {
    // A live refetch usually brings the same numbers: redrawing would reset zoom, tooltips and collapsed nodes.
    const key = JSON.stringify(option);
    if (key === drawn.current) return;
    drawn.current = key;
    chart.current?.setOption({ ...base, ...option }, { notMerge: true });
  }, [option]);

  return <div class="chart" ref={el} style={{ height: `${height}px` }} data-testid={testid} />;
}
