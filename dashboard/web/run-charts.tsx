/** The run page's charts, each a pure function of the run's JSON. */
import { useMemo } from "preact/hooks";
import type { RunDetail, TrialRow } from "../api";
import { Chart, type ChartClick, type Option } from "./chart";
import { bare, esc, metric, metricTick, objectiveOf, outcomeColor, shortId, span, tick, type Objective } from "./format";
import { navigate, trialPath } from "./router";

/** An axis of the metric that always reaches the target (beyond the values on the side the metric improves towards), so its line is on the chart. */
const metricAxis = (o: Objective, run: RunDetail) => ({
  type: "value",
  scale: true,
  ...(!run.open_ended && (o.higherIsBetter ? { max: (v: { max: number }) => Math.max(v.max, run.target) } : { min: (v: { min: number }) => Math.min(v.min, run.target) })),
  axisLabel: { formatter: metricTick(o, 1) },
});

const targetLine = (o: Objective, run: RunDetail) =>
  run.open_ended
    ? {}
    : { markLine: { silent: true, symbol: "none", lineStyle: { color: "#c0392b", type: "dashed" }, label: { position: "insideEndTop", formatter: `target ${metric(o, run.target, 1)}` }, data: [{ yAxis: run.target }] } };

/** The best accepted bound (the CI's lower end for a metric to maximise, its upper end for one to minimise), against wall time or against trials judged. */
export function BestSoFar({ run, over }: { run: RunDetail; over: "time" | "trials" }) {
  const option = useMemo<Option>(() => {
    const o = objectiveOf(run.objective);
    const byTime = over === "time";
    return {
      grid: { left: 52, right: 16, top: 24, bottom: 36 },
      tooltip: { trigger: "axis" },
      xAxis: byTime ? { type: "value", name: "minutes", nameLocation: "middle", nameGap: 22, min: 0 } : { type: "value", name: "trials judged", nameLocation: "middle", nameGap: 22, minInterval: 1, min: 0 },
      yAxis: metricAxis(o, run),
      series: [
        {
          type: "line",
          step: "end",
          symbolSize: 5,
          data: run.best_so_far.map((p) => [byTime ? +(p.t_s / 60).toFixed(2) : p.judged, p.best_ci_low ?? p.best_ci_high]),
          ...targetLine(o, run),
        },
      ],
    };
  }, [run, over]);
  if (!run.best_so_far.length) return <p class="muted">No trial judged yet.</p>;
  return <Chart option={option} height={200} testid={`best-${over}`} />;
}

/** Each scored trial's 95% interval, with the target across. */
export function Intervals({ run }: { run: RunDetail }) {
  const scored = run.trials_table.filter((t) => t.val);
  const option = useMemo<Option>(() => {
    const o = objectiveOf(run.objective);
    const bars = scored.map((t, i) => ({ value: [i, t.val!.ci95[0], t.val!.ci95[1]], itemStyle: { color: outcomeColor(t.verdict, t.failure_label) } }));
    return {
      grid: { left: 52, right: 16, top: 24, bottom: 36 },
      xAxis: { type: "category", data: scored.map((t) => shortId(t.trial_id)) },
      yAxis: metricAxis(o, run),
      tooltip: { trigger: "item", formatter: (p: { dataIndex: number }) => tip(o, scored[p.dataIndex]) },
      series: [
        {
          type: "custom",
          data: bars,
          renderItem: (_: unknown, api: { value: (i: number) => number; coord: (v: number[]) => number[]; style: () => Record<string, unknown> }) => {
            const [x, lo, hi] = [api.value(0), api.value(1), api.value(2)];
            const top = api.coord([x, hi]);
            const bottom = api.coord([x, lo]);
            const style = { stroke: api.style().fill, lineWidth: 1.5 };
            const cap = (y: number) => ({ type: "line", shape: { x1: top[0]! - 4, y1: y, x2: top[0]! + 4, y2: y }, style });
            return { type: "group", children: [{ type: "line", shape: { x1: top[0], y1: top[1], x2: bottom[0], y2: bottom[1] }, style }, cap(top[1]!), cap(bottom[1]!)] };
          },
          encode: { x: 0, y: [1, 2] },
          z: 1,
        },
        {
          type: "scatter",
          symbolSize: 6,
          data: scored.map((t, i) => ({ value: [i, t.val!.mean], itemStyle: { color: outcomeColor(t.verdict, t.failure_label) } })),
          ...targetLine(o, run),
        },
      ],
    };
  }, [run]);
  if (!scored.length) return <p class="muted">No scored trials yet.</p>;
  return <Chart option={option} height={220} testid="intervals-chart" onClick={(p) => scored[p.dataIndex] && navigate(trialPath(run.run_id, scored[p.dataIndex]!.trial_id))} />;
}

function tip(o: Objective, t: TrialRow | undefined): string {
  if (!t) return "";
  const score = t.val ? esc(span(o, t.val)) : t.status;
  return `<b>${esc(shortId(t.trial_id))}</b> ${esc(t.failure_label ?? t.verdict ?? t.status)}<br>${score}<br><span style="white-space:normal">${esc(t.hypothesis.slice(0, 160))}</span>`;
}

interface TreeNode {
  name: string;
  value: string;
  children: TreeNode[];
  itemStyle?: Record<string, unknown>;
  tooltip?: Record<string, unknown>;
}

/** Parent -> child by each trial's first parent; trials without one hang from the run. */
function lineage(run: RunDetail): { root: TreeNode; leaves: number } {
  const o = objectiveOf(run.objective);
  const nodes = new Map<string, TreeNode>();
  for (const t of run.trials_table) {
    const color = outcomeColor(t.verdict, t.failure_label, t.status);
    nodes.set(t.trial_id, { name: shortId(t.trial_id), value: t.trial_id, children: [], itemStyle: { color, borderColor: color }, tooltip: { formatter: tip(o, t) } });
  }
  const root: TreeNode = { name: "run", value: "", children: [], itemStyle: { color: "#34495e", borderColor: "#34495e" }, tooltip: { formatter: esc(run.goal) } };
  for (const t of run.trials_table) {
    const parent = t.parent_ids.map((p) => nodes.get(p)).find(Boolean) ?? root;
    parent.children.push(nodes.get(t.trial_id)!);
  }
  const leaves = [...nodes.values()].filter((n) => !n.children.length).length;
  return { root, leaves };
}

export function LineageTree({ run }: { run: RunDetail }) {
  const { option, height } = useMemo(() => {
    const { root, leaves } = lineage(run);
    return {
      height: Math.max(220, Math.min(900, leaves * 26 + 40)),
      option: {
        tooltip: { trigger: "item", confine: true },
        series: [
          {
            type: "tree",
            data: [root],
            orient: "LR",
            top: 12,
            bottom: 12,
            left: 40,
            right: 120,
            symbolSize: 11,
            initialTreeDepth: -1,
            expandAndCollapse: true,
            roam: false,
            label: { position: "top", fontSize: 11 },
            leaves: { label: { position: "right", verticalAlign: "middle", align: "left" } },
            lineStyle: { color: "#b8c2cc", width: 1.2 },
            animationDurationUpdate: 300,
          },
        ],
      } as Option,
    };
  }, [run]);
  const open = (p: ChartClick) => {
    const id = (p.data as TreeNode | undefined)?.value;
    if (id) navigate(trialPath(run.run_id, id));
  };
  return (
    <>
      <Chart
        option={option}
        height={height}
        testid="lineage-tree"
        // ECharts folds a parent on click; a leaf has nothing to fold, so its click opens the trial.
        onClick={(p) => !(p.data as TreeNode | undefined)?.children.length && open(p)}
        onDblClick={open}
      />
      <p class="hint">Click a leaf to open its trial; click a parent to fold its subtree, double-click it to open it.</p>
    </>
  );
}

const PALE = "#d0dcea";
const DARK = "#1f5fa8";

/** Config features against the score, one line per scored trial. */
export function Parallel({ run }: { run: RunDetail }) {
  const scored = run.trials_table.filter((t) => t.val);
  // Only what differs between trials says anything about the score; the model's size first, and
  // not the rung, which the fidelity columns and the subset and epochs axes already say.
  const keys = [...new Set(scored.flatMap((t) => Object.keys(t.features)))].filter((d) => d !== "rung");
  const dims = [...keys.filter((d) => d === "params"), ...keys.filter((d) => d !== "params")]
    .filter((d) => new Set(scored.map((t) => t.features[d])).size > 1)
    .slice(0, 12);
  const option = useMemo<Option>(() => {
    const o = objectiveOf(run.objective);
    const lo = Math.min(...scored.map((t) => t.val!.mean));
    const hi = Math.max(...scored.map((t) => t.val!.mean));
    return {
      // Names slanted above their axes at full length (ECharts would cut them to the axis spacing), four ticks an axis.
      parallel: {
        left: 40,
        right: 110,
        top: 64,
        bottom: 24,
        parallelAxisDefault: {
          nameLocation: "end",
          nameGap: 16,
          nameRotate: 30,
          nameTruncate: { maxWidth: 200 },
          nameTextStyle: { align: "left", fontSize: 11 },
          splitNumber: 4,
          axisLabel: { formatter: tick, hideOverlap: true },
        },
      },
      // "acc" as the report's tables shorten accuracy, the one proportion; any other metric by its label.
      parallelAxis: [...dims.map((d, i) => ({ dim: i, name: d.replace(/_/g, " "), scale: true })), { dim: dims.length, name: `val ${o.proportion ? "acc" : o.label}`, scale: true, axisLabel: { formatter: metricTick(o, 1) } }],
      // The better the score, the darker its line, whichever way the metric improves.
      visualMap: { show: true, dimension: dims.length, min: lo, max: hi === lo ? lo + 1e-3 : hi, right: 0, top: "middle", itemHeight: 100, calculable: false, text: [bare(o, hi, 1), bare(o, lo, 1)], inRange: { color: o.higherIsBetter ? [PALE, DARK] : [DARK, PALE] } },
      series: [{ type: "parallel", lineStyle: { width: 1.5, opacity: 0.8 }, data: scored.map((t) => [...dims.map((d) => t.features[d] ?? null), t.val!.mean]) }],
    };
  }, [run]);
  if (scored.length < 2) return <p class="muted">Needs two scored trials.</p>;
  if (!dims.length) return <p class="muted">The scored trials share every feature.</p>;
  return <Chart option={option} height={300} testid="parallel-chart" />;
}

export function Failures({ failures }: { failures: Record<string, number> }) {
  const entries = Object.entries(failures).sort((a, b) => b[1] - a[1]);
  const option = useMemo<Option>(
    () => ({
      grid: { left: 110, right: 24, top: 8, bottom: 24 },
      xAxis: { type: "value", minInterval: 1 },
      yAxis: { type: "category", inverse: true, data: entries.map(([k]) => k.replace(/_/g, " ")) },
      series: [{ type: "bar", barMaxWidth: 16, data: entries.map(([k, v]) => ({ value: v, itemStyle: { color: outcomeColor(null, k) } })) }],
    }),
    [failures],
  );
  if (!entries.length) return <p class="muted">No failures.</p>;
  return <Chart option={option} height={Math.max(90, entries.length * 26 + 40)} testid="failures-chart" />;
}
