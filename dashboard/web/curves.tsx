/** Per-epoch curves: every seed of one trial, or two trials' seed means overlaid. */
import { useMemo } from "preact/hooks";
import type { SeedCurves } from "../api";
import { Chart, type Option } from "./chart";

type CurveKey = "val_accuracy" | "train_accuracy" | "val_loss" | "train_loss";

const epochs = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

function axes(kind: "accuracy" | "loss"): Option {
  return {
    grid: { left: 52, right: 16, top: 30, bottom: 36 },
    tooltip: { trigger: "axis", valueFormatter: (v: number) => (kind === "accuracy" ? `${(v * 100).toFixed(2)}%` : v.toFixed(4)) },
    legend: { top: 0, type: "scroll", itemWidth: 14, itemHeight: 8 },
    xAxis: { type: "category", name: "epoch", nameLocation: "middle", nameGap: 22, boundaryGap: false },
    yAxis: kind === "accuracy" ? { type: "value", scale: true, axisLabel: { formatter: (v: number) => `${(v * 100).toFixed(0)}%` } } : { type: "value", scale: true },
  };
}

const line = (name: string, data: number[], dashed: boolean, color?: string) => ({
  type: "line",
  name,
  data,
  symbolSize: 4,
  lineStyle: { type: dashed ? "dashed" : "solid", width: 1.5 },
  ...(color ? { itemStyle: { color } } : {}),
});

/** Validation (solid) and training (dashed) of `kind`, one pair per seed. */
export function SeedCurvesChart({ seeds, kind, testid }: { seeds: SeedCurves[]; kind: "accuracy" | "loss"; testid?: string }) {
  const option = useMemo<Option>(() => {
    const n = Math.max(0, ...seeds.map((s) => s.val_accuracy.length));
    const [val, train] = kind === "accuracy" ? (["val_accuracy", "train_accuracy"] as const) : (["val_loss", "train_loss"] as const);
    const a = axes(kind);
    return {
      ...a,
      xAxis: { ...(a.xAxis as object), data: epochs(n) },
      series: seeds.flatMap((s) => [line(`seed ${s.seed} val`, s[val], false), line(`seed ${s.seed} train`, s[train], true)]),
    };
  }, [seeds, kind]);
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
export function OverlayChart({ a, b, kind }: { a: { name: string; seeds: SeedCurves[] }; b: { name: string; seeds: SeedCurves[] }; kind: "accuracy" | "loss" }) {
  const option = useMemo<Option>(() => {
    const [val, train] = kind === "accuracy" ? (["val_accuracy", "train_accuracy"] as const) : (["val_loss", "train_loss"] as const);
    const n = Math.max(meanCurve(a.seeds, val).length, meanCurve(b.seeds, val).length);
    const ax = axes(kind);
    return {
      ...ax,
      xAxis: { ...(ax.xAxis as object), data: epochs(n) },
      series: [
        line(`${a.name} val`, meanCurve(a.seeds, val), false, "#2f6fb0"),
        line(`${a.name} train`, meanCurve(a.seeds, train), true, "#2f6fb0"),
        line(`${b.name} val`, meanCurve(b.seeds, val), false, "#d9822b"),
        line(`${b.name} train`, meanCurve(b.seeds, train), true, "#d9822b"),
      ],
    };
  }, [a, b, kind]);
  return <Chart option={option} height={230} testid={`overlay-${kind}`} />;
}
