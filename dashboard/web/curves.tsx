/** Per-epoch curves: every seed of one trial, or two trials' seed means overlaid. */
import { useMemo } from "preact/hooks";
import type { SeedCurves } from "../api";
import { Chart, type Option } from "./chart";
import { bare, metricTick, type Objective } from "./format";

/** The run's metric (validation and, where the runner measures it there, training), or the loss. */
export type CurveKind = "metric" | "loss";
type CurveKey = "val_metric" | "train_metric" | "val_loss" | "train_loss";

const KEYS: Record<CurveKind, readonly [CurveKey, CurveKey]> = { metric: ["val_metric", "train_metric"], loss: ["val_loss", "train_loss"] };

const epochs = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

function axes(o: Objective, kind: CurveKind): Option {
  const metric = kind === "metric";
  return {
    grid: { left: 52, right: 16, top: 30, bottom: 36 },
    tooltip: { trigger: "axis", valueFormatter: (v: number) => (metric ? bare(o, v) : v.toFixed(4)) },
    legend: { top: 0, type: "scroll", itemWidth: 14, itemHeight: 8 },
    xAxis: { type: "category", name: "epoch", nameLocation: "middle", nameGap: 22, boundaryGap: false },
    yAxis: metric ? { type: "value", scale: true, axisLabel: { formatter: metricTick(o, 0) } } : { type: "value", scale: true },
  };
}

/** A line per curve that has points: a metric the runner does not measure in training has no training line. */
const line = (name: string, data: number[], dashed: boolean, color?: string) =>
  data.length
    ? [
        {
          type: "line",
          name,
          data,
          symbolSize: 4,
          lineStyle: { type: dashed ? "dashed" : "solid", width: 1.5 },
          ...(color ? { itemStyle: { color } } : {}),
        },
      ]
    : [];

/** Validation (solid) and training (dashed) of `kind`, one pair per seed. */
export function SeedCurvesChart({ o, seeds, kind, testid }: { o: Objective; seeds: SeedCurves[]; kind: CurveKind; testid?: string }) {
  const option = useMemo<Option>(() => {
    const [val, train] = KEYS[kind];
    const n = Math.max(0, ...seeds.map((s) => s[val].length));
    const a = axes(o, kind);
    return {
      ...a,
      xAxis: { ...(a.xAxis as object), data: epochs(n) },
      series: seeds.flatMap((s) => [...line(`seed ${s.seed} val`, s[val], false), ...line(`seed ${s.seed} train`, s[train], true)]),
    };
  }, [o, seeds, kind]);
  return <Chart option={option} height={230} testid={testid} />;
}

export function meanCurve(seeds: SeedCurves[], key: CurveKey): number[] {
  const n = Math.max(0, ...seeds.map((s) => s[key].length));
  return epochs(n).map((_, i) => {
    const xs = seeds.map((s) => s[key][i]).filter((x): x is number => x !== undefined);
    return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  });
}

/** Two trials' seed means overlaid: A blue, B orange; validation solid, training dashed. */
export function OverlayChart({ o, a, b, kind, testid }: { o: Objective; a: { name: string; seeds: SeedCurves[] }; b: { name: string; seeds: SeedCurves[] }; kind: CurveKind; testid: string }) {
  const option = useMemo<Option>(() => {
    const [val, train] = KEYS[kind];
    const n = Math.max(meanCurve(a.seeds, val).length, meanCurve(b.seeds, val).length);
    const ax = axes(o, kind);
    return {
      ...ax,
      xAxis: { ...(ax.xAxis as object), data: epochs(n) },
      series: [
        ...line(`${a.name} val`, meanCurve(a.seeds, val), false, "#2f6fb0"),
        ...line(`${a.name} train`, meanCurve(a.seeds, train), true, "#2f6fb0"),
        ...line(`${b.name} val`, meanCurve(b.seeds, val), false, "#d9822b"),
        ...line(`${b.name} train`, meanCurve(b.seeds, train), true, "#d9822b"),
      ],
    };
  }, [o, a, b, kind]);
  return <Chart option={option} height={230} testid={testid} />;
}
