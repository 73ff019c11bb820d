/**
 * Dependency-free SVG plots for run reports. Everything is drawn with plain
 * shapes and the generic sans-serif family, so the files render the same in a
 * browser, a Markdown viewer or a CI artifact page without fonts or scripts.
 */
import { int, points as inPoints } from "../core/format.js";
import { ACCURACY, formatMetric, type Objective } from "../core/objective.js";

export const PLOT_WIDTH = 720;
export const PLOT_HEIGHT = 360;

const FONT = 'font-family="sans-serif"';
const INK = "#222";
const GRID = "#e4e4e4";
const ACCEPTED = "#1f77b4";
const REJECTED = "#8c8c8c";
const BEST = "#e69f00";
const FAILED = "#d62728";
const SEED_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

/** Coordinates rounded so the files stay small and diff cleanly between rewrites. */
const r = (v: number): string => String(Math.round(v * 10) / 10);

interface Frame {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

const FRAME: Frame = { left: 64, right: PLOT_WIDTH - 20, top: 56, bottom: PLOT_HEIGHT - 48 };

function svgDoc(title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${PLOT_WIDTH}" height="${PLOT_HEIGHT}" viewBox="0 0 ${PLOT_WIDTH} ${PLOT_HEIGHT}" ${FONT} font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${PLOT_WIDTH}" height="${PLOT_HEIGHT}" fill="#fff"/>`,
    `<text x="${PLOT_WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold" fill="${INK}">${escapeXml(title)}</text>`,
    ...body,
    "</svg>",
    "",
  ].join("\n");
}

function text(x: number, y: number, s: string, attrs = ""): string {
  const fill = /\bfill=/.test(attrs) ? "" : ` fill="${INK}"`;
  return `<text x="${r(x)}" y="${r(y)}"${fill}${attrs ? ` ${attrs}` : ""}>${escapeXml(s)}</text>`;
}

function noData(title: string, message: string): string {
  return svgDoc(title, [text(PLOT_WIDTH / 2, PLOT_HEIGHT / 2, message, 'text-anchor="middle" font-size="14" fill-opacity="0.7"')]);
}

/** About `count` round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

/** Decimals a percentage tick needs so neighbouring ticks never print the same. */
function pctDecimals(ticks: number[]): number {
  const step = ticks.length > 1 ? Math.abs(ticks[1]! - ticks[0]!) * 100 : 1;
  return Math.max(0, Math.min(3, Math.ceil(-Math.log10(step) + 1e-9)));
}

/** Axis range with a little headroom; a proportion's is kept inside [0, 1]. */
function metricRange(values: number[], o: Objective): [number, number] {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  const span = Math.max(hi - lo, o.proportion ? 0.01 : Math.abs(hi) * 0.01 || 0.01);
  lo = lo - span * 0.12;
  hi = hi + span * 0.12;
  return o.proportion ? [Math.max(0, lo), Math.min(1, hi)] : [lo, hi];
}

function yAxis(f: Frame, lo: number, hi: number, y: (v: number) => number, label: string, o: Objective): string[] {
  const ticks = niceTicks(lo, hi);
  const decimals = pctDecimals(ticks);
  const out = ticks.map(
    (t) =>
      `<line x1="${f.left}" x2="${f.right}" y1="${r(y(t))}" y2="${r(y(t))}" stroke="${GRID}"/>` +
      text(f.left - 6, y(t) + 4, o.proportion ? `${inPoints(t, decimals)}%` : String(t), 'text-anchor="end"'),
  );
  out.push(text(16, (f.top + f.bottom) / 2, label, `text-anchor="middle" transform="rotate(-90 16 ${r((f.top + f.bottom) / 2)})"`));
  return out;
}

function axesBox(f: Frame): string {
  return `<path d="M${f.left} ${f.top}V${f.bottom}H${f.right}" fill="none" stroke="${INK}"/>`;
}

function xTicks(f: Frame, n: number, x: (i: number) => number, label: string): string[] {
  // Every position while they fit, else round numbers (plus 1, where counting starts).
  const shown = n <= 24 ? Array.from({ length: n }, (_, k) => k + 1) : [1, ...niceTicks(0, n, 12).filter((t) => t > 1)];
  const out: string[] = [];
  for (const i of shown) {
    out.push(`<line x1="${r(x(i))}" x2="${r(x(i))}" y1="${f.bottom}" y2="${f.bottom + 4}" stroke="${INK}"/>`);
    out.push(text(x(i), f.bottom + 17, String(i), 'text-anchor="middle"'));
  }
  out.push(text((f.left + f.right) / 2, f.bottom + 36, label, 'text-anchor="middle"'));
  return out;
}

/** A row of legend entries laid out right to left from the top-right corner. */
function legend(entries: { swatch: string; label: string }[], y = 38): string[] {
  const out: string[] = [];
  let x = FRAME.right;
  for (const e of [...entries].reverse()) {
    const w = e.label.length * 6.6 + 28;
    x -= w;
    out.push(`<g transform="translate(${r(x)} ${y})">${e.swatch}${text(20, 4, e.label)}</g>`);
  }
  return out;
}

function cross(x: number, y: number, size: number, cls: string, tip: string): string {
  return (
    `<g class="${cls}" stroke="${FAILED}" stroke-width="2.5"><title>${escapeXml(tip)}</title>` +
    `<line x1="${r(x - size)}" y1="${r(y - size)}" x2="${r(x + size)}" y2="${r(y + size)}"/>` +
    `<line x1="${r(x - size)}" y1="${r(y + size)}" x2="${r(x + size)}" y2="${r(y - size)}"/></g>`
  );
}

/** One trial on a plot: a dot with its interval whiskers (a path), its tip, and a ring when it is the one to find. */
function markedPoint(cls: string, tip: string, whiskers: string, width: number, cx: number, cy: number, colour: string, ring?: { cls: string; colour: string }): string {
  return (
    `<g class="${cls}"><title>${escapeXml(tip)}</title>` +
    `<path d="${whiskers}" stroke="${colour}" stroke-width="${width}"/>` +
    `<circle cx="${r(cx)}" cy="${r(cy)}" r="4" fill="${colour}"/>` +
    (ring ? `<circle class="${ring.cls}" cx="${r(cx)}" cy="${r(cy)}" r="9" fill="none" stroke="${ring.colour}" stroke-width="2"/>` : "") +
    "</g>"
  );
}

export interface ScorePoint {
  trialId: string;
  /** Absent when the trial produced no result (it failed before or during evaluation). */
  mean?: number;
  ci95?: readonly [number, number];
  accepted: boolean;
  best: boolean;
  failure?: string;
}

/** A seed's curves of the run's metric: validation, and training where it is measured (accuracy). */
export interface SeedCurve {
  seed: number;
  val: readonly number[];
  train: readonly number[];
}

/**
 * The run's validation metric per trial (mean, 95% CI bars), in the order
 * given; trials without a score are red crosses on the floor, the target is a
 * dashed line and the best trial is ringed.
 */
export function scoresSvg(points: readonly ScorePoint[], target?: number, o: Objective = ACCURACY): string {
  const title = `Validation ${o.label} per trial (mean, 95% CI${o.higherIsBetter ? "" : "; lower is better"})`;
  if (points.length === 0) return noData(title, "no trials yet");
  const values = points.flatMap((p) => (p.mean === undefined ? [] : [p.mean, ...(p.ci95 ?? [])]));
  if (target) values.push(target);
  const f = FRAME;
  const [lo, hi] = values.length ? metricRange(values, o) : [0, 1];
  // The band between the lowest tick and the axis is where failed trials sit.
  const floor = f.bottom - 14;
  const y = (v: number) => floor - ((v - lo) / (hi - lo)) * (floor - f.top);
  const n = points.length;
  const x = (i: number) => f.left + ((i - 0.5) / n) * (f.right - f.left);

  const body: string[] = [...yAxis(f, lo, hi, y, `validation ${o.label}`, o), axesBox(f), ...xTicks(f, n, x, "trial (proposal order)")];
  if (target) {
    body.push(
      `<line class="target" x1="${f.left}" x2="${f.right}" y1="${r(y(target))}" y2="${r(y(target))}" stroke="${FAILED}" stroke-width="1.5" stroke-dasharray="6 4"/>`,
      text(f.left + 6, y(target) - 5, `target ${formatMetric(o, target)}`, `fill="${FAILED}"`),
    );
  }
  points.forEach((p, k) => {
    const cx = x(k + 1);
    if (p.mean === undefined) {
      body.push(cross(cx, floor + 7, 5, "fail", `${p.trialId}: ${p.failure ?? "no result"}`));
      return;
    }
    const colour = p.best ? BEST : p.accepted ? ACCEPTED : REJECTED;
    const [cLo, cHi] = p.ci95 ?? [p.mean, p.mean];
    const tip = `${p.trialId}: ${formatMetric(o, p.mean)} [${o.proportion ? inPoints(cLo) : formatMetric(o, cLo)}, ${o.proportion ? inPoints(cHi) : formatMetric(o, cHi)}]${p.failure ? ` (${p.failure})` : ""}`;
    const whiskers = `M${r(cx)} ${r(y(cLo))}V${r(y(cHi))}M${r(cx - 4)} ${r(y(cLo))}h8M${r(cx - 4)} ${r(y(cHi))}h8`;
    body.push(markedPoint("point", tip, whiskers, 1.5, cx, y(p.mean), colour, p.best ? { cls: "best", colour: BEST } : undefined));
  });
  body.push(
    ...legend([
      { swatch: `<circle cx="8" cy="0" r="4" fill="${ACCEPTED}"/>`, label: "accepted" },
      { swatch: `<circle cx="8" cy="0" r="4" fill="${REJECTED}"/>`, label: "rejected" },
      { swatch: `<circle cx="8" cy="0" r="7" fill="none" stroke="${BEST}" stroke-width="2"/><circle cx="8" cy="0" r="3" fill="${BEST}"/>`, label: "best" },
      { swatch: cross(8, 0, 4, "legend-fail", "failed"), label: "failed" },
    ]),
  );
  return svgDoc(title, body);
}

/** Per-seed validation (solid) and train (dashed) metric per epoch of one trial. */
export function learningCurvesSvg(trialId: string | undefined, seeds: readonly SeedCurve[], o: Objective = ACCURACY): string {
  const title = trialId ? `Learning curves of the best trial (${trialId})` : "Learning curves of the best trial";
  const curves = seeds.filter((c) => c.val.length || c.train.length);
  if (!curves.length) return noData(title, trialId ? "no learning curves recorded" : "no accepted trial");
  const epochs = Math.max(...curves.map((c) => Math.max(c.val.length, c.train.length)));
  const f = FRAME;
  const [lo, hi] = metricRange(curves.flatMap((c) => [...c.val, ...c.train]), o);
  const y = (v: number) => f.bottom - ((v - lo) / (hi - lo)) * (f.bottom - f.top);
  const x = (e: number) => (epochs === 1 ? (f.left + f.right) / 2 : f.left + 16 + ((e - 1) / (epochs - 1)) * (f.right - f.left - 32));
  const body: string[] = [...yAxis(f, lo, hi, y, o.label, o), axesBox(f), ...xTicks(f, epochs, x, "epoch")];
  const colourOf = (k: number) => SEED_COLORS[k % SEED_COLORS.length]!;
  curves.forEach((c, k) => {
    const line = (vs: readonly number[], cls: string, dashed: boolean) =>
      vs.length
        ? `<polyline class="${cls}" points="${vs.map((v, e) => `${r(x(e + 1))},${r(y(v))}`).join(" ")}" fill="none" stroke="${colourOf(k)}" stroke-width="2"${dashed ? ' stroke-dasharray="5 4" stroke-opacity="0.75"' : ""}/>` +
          vs.map((v, e) => `<circle cx="${r(x(e + 1))}" cy="${r(y(v))}" r="${dashed ? 2 : 3}" fill="${colourOf(k)}"/>`).join("")
        : "";
    body.push(`<g class="seed"><title>seed ${c.seed}</title>${line(c.train, "train", true)}${line(c.val, "val", false)}</g>`);
  });
  body.push(
    ...legend([
      // Past six seeds the legend would run into the title; the tooltips still name each seed.
      ...(curves.length <= 6
        ? curves.map((c, k) => ({ swatch: `<rect x="2" y="-5" width="12" height="10" fill="${colourOf(k)}"/>`, label: `seed ${c.seed}` }))
        : [{ swatch: SEED_COLORS.slice(0, 4).map((c, k) => `<rect x="${k * 4}" y="-5" width="4" height="10" fill="${c}"/>`).join(""), label: `${curves.length} seeds` }]),
      { swatch: `<line x1="0" x2="16" y1="0" y2="0" stroke="${INK}" stroke-width="2"/>`, label: "validation" },
      { swatch: `<line x1="0" x2="16" y1="0" y2="0" stroke="${INK}" stroke-width="2" stroke-dasharray="5 4"/>`, label: "train" },
    ]),
  );
  return svgDoc(title, body);
}

/** Horizontal bars, one per failure label, longest first. */
export function failuresSvg(counts: Readonly<Record<string, number>>): string {
  const title = "Failures by label";
  const rows = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (!rows.length) return noData(title, "no failures");
  const f: Frame = { ...FRAME, left: 150, right: PLOT_WIDTH - 48, top: 44, bottom: PLOT_HEIGHT - 44 };
  const max = Math.max(...rows.map(([, n]) => n));
  const ticks = niceTicks(0, max, Math.min(max, 6)).filter((t) => Number.isInteger(t));
  const top = ticks[ticks.length - 1]! >= max ? ticks[ticks.length - 1]! : max;
  const x = (v: number) => f.left + (v / top) * (f.right - f.left);
  const slot = (f.bottom - f.top) / rows.length;
  const barH = Math.min(32, slot * 0.7);
  const body: string[] = ticks.map(
    (t) =>
      `<line x1="${r(x(t))}" x2="${r(x(t))}" y1="${f.top}" y2="${f.bottom}" stroke="${GRID}"/>` +
      text(x(t), f.bottom + 16, String(t), 'text-anchor="middle"'),
  );
  body.push(text((f.left + f.right) / 2, f.bottom + 34, "trials", 'text-anchor="middle"'));
  rows.forEach(([label, n], k) => {
    const cy = f.top + slot * (k + 0.5);
    body.push(
      `<g class="bar"><title>${escapeXml(`${label}: ${n}`)}</title>` +
        `<rect x="${f.left}" y="${r(cy - barH / 2)}" width="${r(x(n) - f.left)}" height="${r(barH)}" fill="${FAILED}" fill-opacity="0.85"/>` +
        text(f.left - 8, cy + 4, label, 'text-anchor="end"') +
        text(x(n) + 6, cy + 4, String(n), 'font-weight="bold"') +
        "</g>",
    );
  });
  body.push(`<path d="M${f.left} ${f.top}V${f.bottom}" stroke="${INK}"/>`);
  return svgDoc(title, body);
}

/** One trial on a Pareto plot: its metric and one cost, each a mean with its interval. */
export interface FrontPoint {
  trialId: string;
  metric: { mean: number; low: number; high: number };
  cost: { mean: number; low: number; high: number };
  onFront: boolean;
  knee: boolean;
}

/**
 * A Pareto goal's trials on its metric (up) against one cost (across, on a log scale: parameters
 * and latency span orders of magnitude), each with its intervals as whiskers; the front's trials
 * are joined in cost order, dominated ones grey, the knee ringed.
 */
export function frontSvg(points: readonly FrontPoint[], costLabel: string, o: Objective = ACCURACY): string {
  const title = `Pareto front: validation ${o.label} against ${costLabel} (95% CI whiskers)`;
  const usable = points.filter((p) => p.cost.low > 0);
  if (!usable.length) return noData(title, "no trial on the front yet");
  const f = FRAME;
  const [lo, hi] = metricRange(usable.flatMap((p) => [p.metric.low, p.metric.high]), o);
  const y = (v: number) => f.bottom - ((v - lo) / (hi - lo)) * (f.bottom - f.top);
  const lx = usable.flatMap((p) => [Math.log10(p.cost.low), Math.log10(p.cost.high)]);
  const pad = Math.max(0.05, (Math.max(...lx) - Math.min(...lx)) * 0.08);
  const [xlo, xhi] = [Math.min(...lx) - pad, Math.max(...lx) + pad];
  const x = (v: number) => f.left + ((Math.log10(v) - xlo) / (xhi - xlo)) * (f.right - f.left);
  const body: string[] = [...yAxis(f, lo, hi, y, `validation ${o.label}`, o), axesBox(f)];
  for (let e = Math.ceil(xlo); e <= Math.floor(xhi); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (Math.log10(v) < xlo || Math.log10(v) > xhi) continue;
      body.push(`<line x1="${r(x(v))}" x2="${r(x(v))}" y1="${f.bottom}" y2="${f.bottom + 4}" stroke="${INK}"/>`, text(x(v), f.bottom + 17, int(Number(v.toPrecision(3))), 'text-anchor="middle"'));
    }
  }
  body.push(text((f.left + f.right) / 2, f.bottom + 36, `${costLabel} (log scale)`, 'text-anchor="middle"'));
  const front = usable.filter((p) => p.onFront).sort((a, b) => a.cost.mean - b.cost.mean);
  if (front.length > 1) body.push(`<path class="front" d="${front.map((p, i) => `${i ? "L" : "M"}${r(x(p.cost.mean))} ${r(y(p.metric.mean))}`).join("")}" fill="none" stroke="${BEST}" stroke-width="1.5"/>`);
  for (const p of usable) {
    const colour = p.onFront ? BEST : REJECTED;
    const [cx, cy] = [x(p.cost.mean), y(p.metric.mean)];
    const tip = `${p.trialId}: ${formatMetric(o, p.metric.mean)}, ${Number(p.cost.mean.toPrecision(3))} ${costLabel}${p.knee ? " (knee)" : ""}`;
    const whiskers = `M${r(cx)} ${r(y(p.metric.low))}V${r(y(p.metric.high))}M${r(x(p.cost.low))} ${r(cy)}H${r(x(p.cost.high))}`;
    body.push(markedPoint(p.onFront ? "front-point" : "point", tip, whiskers, 1.2, cx, cy, colour, p.knee ? { cls: "knee", colour: ACCEPTED } : undefined));
  }
  body.push(
    ...legend([
      { swatch: `<circle cx="8" cy="0" r="4" fill="${BEST}"/>`, label: "on the front" },
      { swatch: `<circle cx="8" cy="0" r="4" fill="${REJECTED}"/>`, label: "dominated" },
      { swatch: `<circle cx="8" cy="0" r="7" fill="none" stroke="${ACCEPTED}" stroke-width="2"/>`, label: "knee" },
    ]),
  );
  return svgDoc(title, body);
}

/** Past this many classes the cells are too small to read: the report's table says it instead. */
const MAX_CONFUSION_CLASSES = 40;

/**
 * A confusion matrix as shares of each true class (a row sums to 100%): true classes down,
 * predictions across, each cell shaded by its share and, while the cells are wide enough, labelled
 * with it; each cell's tip gives its count.
 */
export function confusionSvg(title: string, names: readonly string[], counts: readonly (readonly number[])[]): string {
  const k = counts.length;
  if (!k) return noData(title, "no confusion matrix recorded");
  if (k > MAX_CONFUSION_CLASSES) return noData(title, `${k} classes: too many to draw (the report's table lists each)`);
  // Square cells left of a column of class names; the names of the predictions run down below.
  const f: Frame = { left: 170, right: PLOT_WIDTH - 20, top: 44, bottom: PLOT_HEIGHT - 70 };
  const cell = Math.min((f.bottom - f.top) / k, (f.right - f.left) / k);
  // The grid in the middle of the plot, with room for the class names on its left.
  const [x0, y0] = [Math.max(f.left, (PLOT_WIDTH - cell * k) / 2 + 40), f.top];
  const label = (s: string) => (s.length > 18 ? `${s.slice(0, 17)}…` : s);
  const body: string[] = [];
  counts.forEach((row, i) => {
    const total = row.reduce((a, b) => a + b, 0);
    body.push(text(x0 - 8, y0 + cell * (i + 0.5) + 4, label(names[i] ?? String(i)), 'text-anchor="end"'));
    for (let j = 0; j < k; j++) {
      const n = row[j] ?? 0;
      const share = total ? n / total : 0;
      const [x, y] = [x0 + cell * j, y0 + cell * i];
      // Right answers blue, mistakes red; the square root keeps a 1% mistake visible.
      const fill = i === j ? ACCEPTED : FAILED;
      const shown = cell >= 22 && n > 0 ? text(x + cell / 2, y + cell / 2 + 3.5, share < 0.005 ? "<1" : `${Math.round(share * 100)}`, `text-anchor="middle" font-size="10"${share > 0.5 ? ' fill="#fff"' : ""}`) : "";
      body.push(
        `<g class="cell"><title>${escapeXml(`${names[i] ?? i} taken for ${names[j] ?? j}: ${n} of ${total} (${inPoints(share, 1)}%)`)}</title>` +
          `<rect x="${r(x)}" y="${r(y)}" width="${r(cell)}" height="${r(cell)}" fill="${fill}" fill-opacity="${Math.round(Math.sqrt(share) * 100) / 100}" stroke="${GRID}"/>` +
          shown +
          "</g>",
      );
    }
  });
  // Predictions' names below the grid, turned so that long ones fit.
  for (let j = 0; j < k; j++) {
    const x = x0 + cell * (j + 0.5);
    body.push(text(x, y0 + cell * k + 10, label(names[j] ?? String(j)), `text-anchor="end" transform="rotate(-45 ${r(x)} ${r(y0 + cell * k + 10)})" font-size="11"`));
  }
  const side = Math.max(16, x0 - 140);
  body.push(text(side, y0 + (cell * k) / 2, "true class", `text-anchor="middle" transform="rotate(-90 ${r(side)} ${r(y0 + (cell * k) / 2)})"`));
  body.push(text(x0 + cell * k + 8, y0 + 12, "predicted as (% of the true class)"));
  return svgDoc(title, body);
}
