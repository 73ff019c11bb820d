/**
 * A Pareto goal's front on the run page (the report's front, lineage-store/report.ts frontJson):
 * its trials as points of the validation metric against the first cost the goal trades off, each
 * with its intervals on both axes, the knee marked; a table of every objective; and what a
 * latency limit did.
 */
import { useMemo } from "preact/hooks";
import { int } from "../../core/format";
import { COSTS, type CostName } from "../../core/objective";
import type { Estimate, FrontJson, LimitsJson, RunDetail } from "../api";
import { Chart, type ChartClick, type Option } from "./chart";
import { bare, esc, metric, metricTick, objectiveOf, shortId, tick, type Objective } from "./format";
import { navigate, trialPath } from "./router";

const KNEE = "#c0392b";
const POINT = "#1f5fa8";
const WHISKER = "#8fa6bf";

/** The cost an axis after the metric stands for (the goal's trade-offs in order); undefined for one this page does not know. */
const costOf = (run: RunDetail, axis: number): CostName | undefined => {
  const c = run.trade_offs[axis - 1];
  return c && c in COSTS ? (c as CostName) : undefined;
};

/** A cost's value in its units: "20,000", "0.520 ms". */
function costValue(cost: CostName | undefined, x: number): string {
  if (cost === "params") return int(Math.round(x));
  const unit = cost ? COSTS[cost].unit : "";
  return `${Number(x.toPrecision(3))}${unit ? ` ${unit}` : ""}`;
}

/** An objective's value with its interval where it has one: "85.00% [84.0%, 86.0%]", "0.5 ms [0.5, 0.55]", "20,000". */
export function objectiveText(o: Objective, run: RunDetail, axis: number, e: Estimate): string {
  if (axis === 0) return `${metric(o, e.mean)} [${bare(o, e.low, 1)}, ${bare(o, e.high, 1)}]`;
  const cost = costOf(run, axis);
  const mean = costValue(cost, e.mean);
  if (e.low === e.high && e.low === e.mean) return mean;
  const bound = (x: number) => (cost === "params" ? int(Math.round(x)) : String(Number(x.toPrecision(3))));
  return `${mean} [${bound(e.low)}, ${bound(e.high)}]`;
}

/** The axis's name with its unit: "latency per example (ms)". */
function axisName(run: RunDetail, front: FrontJson, axis: number): string {
  const cost = costOf(run, axis);
  const unit = cost ? COSTS[cost].unit : "";
  return `${front.axes[axis]?.name ?? ""}${unit ? ` (${unit})` : ""}`;
}

/** A point's trial index: the last number of its value, whichever series it is on. */
function indexOf(p: ChartClick): number | undefined {
  const d = p.data as number[] | { value?: number[] } | undefined;
  const v = Array.isArray(d) ? d : d?.value;
  return v?.[v.length - 1];
}

/** The front's trials: validation metric (y) against the first traded-off cost (x, log), 95% whiskers on both, the knee a red diamond. */
export function FrontChart({ run, front }: { run: RunDetail; front: FrontJson }) {
  const option = useMemo<Option>(() => {
    const o = objectiveOf(run.objective);
    const pts = front.trials.map((t, i) => ({ t, i, x: t.values[1]!, y: t.values[0]! }));
    // A log axis needs every value above 0; a cost of 0 (an untimed model is not on the front) falls back to a linear one.
    const log = pts.every((p) => p.x.low > 0);
    const tip = (i: number) => {
      const t = front.trials[i];
      if (!t) return "";
      const lines = t.values.map((v, k) => `${esc(front.axes[k]?.name ?? "")}: ${esc(objectiveText(o, run, k, v))}`);
      return `<b>${esc(shortId(t.trial_id))}</b>${t.trial_id === front.knee ? " (knee)" : ""}<br>${lines.join("<br>")}`;
    };
    const knee = pts.find((p) => p.t.trial_id === front.knee);
    return {
      grid: { left: 60, right: 32, top: 24, bottom: 44 },
      tooltip: { trigger: "item", confine: true, formatter: (p: { value: number[] }) => tip(p.value[p.value.length - 1]!) },
      xAxis: { type: log ? "log" : "value", scale: true, name: axisName(run, front, 1), nameLocation: "middle", nameGap: 26, axisLabel: { formatter: tick } },
      yAxis: { type: "value", scale: true, name: front.axes[0]?.name ?? o.label, axisLabel: { formatter: metricTick(o, 1) } },
      series: [
        {
          // The front as a line from the cheapest to the dearest: where it trades off.
          type: "line",
          silent: true,
          symbol: "none",
          lineStyle: { color: "#b8c2cc", type: "dashed", width: 1 },
          data: [...pts].sort((a, b) => a.x.mean - b.x.mean).map((p) => [p.x.mean, p.y.mean, p.i]),
          z: 0,
        },
        {
          type: "custom",
          data: pts.map((p) => [p.x.mean, p.x.low, p.x.high, p.y.mean, p.y.low, p.y.high, p.i]),
          encode: { x: [0, 1, 2], y: [3, 4, 5] },
          itemStyle: { color: WHISKER },
          renderItem: (_: unknown, api: { value: (i: number) => number; coord: (v: number[]) => number[]; style: () => Record<string, unknown> }) => {
            const [x, xlo, xhi, y, ylo, yhi] = [0, 1, 2, 3, 4, 5].map((k) => api.value(k)) as [number, number, number, number, number, number];
            const style = { stroke: api.style().fill, lineWidth: 1.2 };
            const line = (a: number[], b: number[]) => ({ type: "line", shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style });
            const [left, right, top, bottom] = [api.coord([xlo, y]), api.coord([xhi, y]), api.coord([x, yhi]), api.coord([x, ylo])] as number[][];
            const children = [line(top!, bottom!), line([top![0]! - 3, top![1]!], [top![0]! + 3, top![1]!]), line([bottom![0]! - 3, bottom![1]!], [bottom![0]! + 3, bottom![1]!])];
            if (right![0]! - left![0]! > 0.5) children.push(line(left!, right!), line([left![0]!, left![1]! - 3], [left![0]!, left![1]! + 3]), line([right![0]!, right![1]! - 3], [right![0]!, right![1]! + 3]));
            return { type: "group", children };
          },
          z: 1,
        },
        {
          type: "scatter",
          symbolSize: 9,
          itemStyle: { color: POINT },
          data: pts.map((p) => ({ value: [p.x.mean, p.y.mean, p.i] })),
          z: 2,
        },
        {
          type: "scatter",
          symbol: "diamond",
          symbolSize: 16,
          itemStyle: { color: KNEE },
          label: { show: true, position: "right", formatter: "knee", color: KNEE },
          data: knee ? [{ value: [knee.x.mean, knee.y.mean, knee.i] }] : [],
          z: 3,
        },
      ],
    };
  }, [run, front]);
  const open = (p: ChartClick) => {
    const i = indexOf(p);
    const t = i === undefined ? undefined : front.trials[i];
    if (t) navigate(trialPath(run.run_id, t.trial_id));
  };
  return <Chart option={option} height={300} testid="front-chart" onClick={open} />;
}

/** Each front trial's objectives, mean and interval, the knee named. */
export function FrontTable({ run, front }: { run: RunDetail; front: FrontJson }) {
  const o = objectiveOf(run.objective);
  return (
    <table class="grid" data-testid="front-table">
      <thead>
        <tr>
          <th>trial</th>
          {front.axes.map((_, k) => (
            <th class="num">
              {axisName(run, front, k)}
              {k === 0 ? " (95% CI)" : ""}
            </th>
          ))}
          <th class="num" title="NSGA-II's crowding distance on the front: how far apart its neighbours are; the extremes have no finite one">
            crowding
          </th>
        </tr>
      </thead>
      <tbody>
        {front.trials.map((t) => (
          <tr key={t.trial_id} data-testid="front-row" data-trial={t.trial_id} class={t.trial_id === front.knee ? "best" : ""}>
            <td class="nowrap">
              <a href={trialPath(run.run_id, t.trial_id)}>{shortId(t.trial_id)}</a>
              {t.trial_id === front.knee && (
                <>
                  {" "}
                  <span class="tag" data-testid="knee-tag" title="the balanced trade-off: the front's point closest to the ideal, each objective scaled to [0, 1] over the front">
                    knee
                  </span>
                </>
              )}
            </td>
            {t.values.map((v, k) => (
              <td class="num nowrap">{objectiveText(o, run, k, v)}</td>
            ))}
            <td class="num">{t.crowding === null ? "extreme" : t.crowding.toFixed(2)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** "3 within the limit of 2 ms, 1 over it (over_limit)", and the best within every limit. */
export function LimitsLine({ run, limits }: { run: RunDetail; limits: LimitsJson }) {
  return (
    <p data-testid="limits-line">
      {limits.within.length} within the limit of {limits.max_latency_ms} ms, {limits.over.length} over it (over_limit)
      {limits.best_within && (
        <>
          ; the best within every limit: <a href={trialPath(run.run_id, limits.best_within)}>{shortId(limits.best_within)}</a>
          {limits.best_latency_ms !== null && <>, held to {limits.best_latency_ms.toPrecision(3)} ms (the fastest timing of its model)</>}
        </>
      )}
      .
    </p>
  );
}

/** The front (chart, table, knee, rule) and the limits line; either may be absent. */
export function FrontView({ run }: { run: RunDetail }) {
  const { front, limits } = run;
  const o = objectiveOf(run.objective);
  return (
    <>
      {limits && <LimitsLine run={run} limits={limits} />}
      {front &&
        (front.trials.length ? (
          <>
            <FrontChart run={run} front={front} />
            <p class="hint">
              {front.axes[0]?.name} against {front.axes[1]?.name}
              {front.axes.length > 2 ? " (the first cost the goal trades off; the table below has every objective)" : ""}, each point with its intervals on both axes; click a point to open its trial.
            </p>
            <FrontTable run={run} front={front} />
            <p data-testid="front-knee">
              {front.knee ? (
                <>
                  The knee, the balanced trade-off: <a href={trialPath(run.run_id, front.knee)}>{shortId(front.knee)}</a>.
                </>
              ) : (
                "No knee: the front is empty."
              )}
            </p>
            {front.trained_long.length > 0 && (
              <p data-testid="front-trained-long">
                Trained again on the full split:{" "}
                {front.trained_long.map((l, k) => (
                  <>
                    {k > 0 && ", "}
                    <a href={trialPath(run.run_id, l.trial_id)}>{shortId(l.trial_id)}</a>
                    {l.from && ` (from ${shortId(l.from)})`}
                    {l.val && `: ${metric(o, l.val.mean)}`}
                  </>
                ))}
                .
              </p>
            )}
          </>
        ) : (
          <p class="muted">No accepted rung-0 trial has every objective measured yet.</p>
        ))}
      {front && <p class="muted">Rule: {front.rule}.</p>}
    </>
  );
}
