/**
 * The headline table of docs/BENCHMARKS.md and the README, made from the result files in
 * bench/results: each figure from the newest series file that has it (a series: three runs or
 * more; the newest single runs only where no series exists, and said so), one row per machine
 * class (a CPU with native bf16 or without) where both have it, with the peer of the
 * same sitting, the commit and the machine that made it. No figure is copied by hand: the docs
 * hold this script's output between the markers below, and test/core/headline.test.ts fails
 * when they differ.
 *
 *   npx tsx bench/headline.ts          # rewrites the table in both files
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const RESULTS = join(ROOT, "bench", "results");
export const DOCS = ["docs/BENCHMARKS.md", "README.md"].map((f) => join(ROOT, f));
export const START = "<!-- headline: made by bench/headline.ts from bench/results; do not edit -->";
export const END = "<!-- /headline -->";

interface Stat {
  n: number;
  mean: number;
  min: number;
  max: number;
}
interface Machine {
  cpu?: string;
  cores?: number;
  cpu_bf16?: boolean;
  calibration_step_ms?: number;
}
interface SeriesFile {
  commit: string;
  date: string;
  machine: Machine;
  summary: Record<string, unknown>;
}

/** A figure of the table: how to read it and its peers' from a series summary, what else the series says of it, and how to print a value. */
interface Figure {
  what: string;
  value: (s: Record<string, unknown>) => Stat | undefined;
  peers?: { name: string; value: (s: Record<string, unknown>) => Stat | undefined }[];
  /** More of the series' own facts, after the figure's name ("; edits judged ..."). */
  detail?: (s: Record<string, unknown>) => string;
  unit: "pct" | "s" | "hv";
}

const stat = (key: string) => (s: Record<string, unknown>) => {
  const v = s[key] as Stat | null | undefined;
  return v && typeof v.mean === "number" ? v : undefined;
};

/** The edits of a series' runs by the report's rule, summed (bench/run-facts.ts): "" where the series did not record them. */
const editsText = (e: Edits | undefined) => (e ? `; edits judged in its runs: ${e.judged}, ${e.supported} supported and ${e.refuted} refuted` : "");

const OPEN_PEERS = [
  { name: "Optuna TPE + median pruning", value: stat("optuna_test") },
  { name: "hand-written ResNet-9 script", value: stat("handwritten_test") },
];

const FIGURES: Figure[] = [
  { what: "30-min open-ended Fashion-MNIST (2 CPU cores): test accuracy, ensemble of the best trial's seeds", value: stat("open_ended_test_ensemble"), peers: OPEN_PEERS, detail: (s) => editsText(s.open_ended_edits as Edits | undefined), unit: "pct" },
  { what: "the same, per seed", value: stat("open_ended_test_per_seed"), peers: OPEN_PEERS, unit: "pct" },
  { what: "hand-written ResNet-9 script, 30 min on 2 CPU cores (bench/handwritten_resnet9.py): test accuracy", value: stat("handwritten_test"), unit: "pct" },
  { what: "README's first command (reach 90% validation accuracy): run seconds to the confirmed goal", value: stat("readme_seconds_to_goal"), unit: "s" },
  { what: "best accuracy under 1 ms per image (15 min): test accuracy per seed", value: stat("latency_swarm_test"), peers: [{ name: "Optuna with the latency constraint", value: stat("latency_optuna_test") }], unit: "pct" },
  { what: "Pareto goal (accuracy vs parameters vs latency, 15 min): dominated hypervolume", value: stat("swarm_hypervolume"), peers: [{ name: "Optuna multi-objective TPE", value: stat("optuna_hypervolume") }], unit: "hv" },
];

function show(v: number, unit: Figure["unit"]): string {
  return unit === "pct" ? `${(100 * v).toFixed(2)}%` : unit === "s" ? `${Math.round(v)} s` : v.toFixed(3);
}

function spread(s: Stat, unit: Figure["unit"]): string {
  return s.n > 1 ? `${show(s.mean, unit)} (${show(s.min, unit)}-${show(s.max, unit)})` : show(s.mean, unit);
}

function machine(m: Machine): string {
  const bf16 = m.cpu_bf16 === undefined ? "bf16 unrecorded" : m.cpu_bf16 ? "native bf16" : "no native bf16";
  const calibration = m.calibration_step_ms ? `, calibration step ${m.calibration_step_ms} ms` : "";
  return `${m.cpu ?? "?"}, ${m.cores ?? "?"} cores, ${bf16}${calibration}`;
}

function seriesFiles(dir: string): SeriesFile[] {
  return readdirSync(dir)
    .filter((f) => /^search-series-\w+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as SeriesFile)
    .sort((a, b) => b.date.localeCompare(a.date));
}

/**
 * The machine classes a figure gets a row each in, the faster first: a CPU with native bf16
 * trains up to 2x faster than one without, so a time (the README's first command) from one says
 * nothing of the other. A file that did not record the flag counts in neither; its figure shows
 * only where no file of either class has one.
 */
const CLASSES = [true, false];

/** `files` (each holding the figure), newest first, split by machine class; all of them as one where no class has any. */
function byMachineClass<T extends { machine: Machine }>(files: T[]): T[][] {
  const classes = CLASSES.map((bf16) => files.filter((f) => f.machine.cpu_bf16 === bf16)).filter((of) => of.length);
  return classes.length ? classes : files.length ? [files] : [];
}

/** A figure's rows: the newest series of each machine class (a series: three runs or more; else the newest file that has the figure). */
function figureRows(fig: Figure, files: SeriesFile[]): string[] {
  const having = files.filter((f) => fig.value(f.summary));
  return byMachineClass(having).map((of) => {
    const found = of.find((f) => fig.value(f.summary)!.n >= 3) ?? of[0]!;
    const v = fig.value(found.summary)!;
    const peers = (fig.peers ?? []).flatMap((p) => {
      const pv = p.value(found.summary);
      return pv ? [`${p.name}: ${spread(pv, fig.unit)}, ${pv.n} run${pv.n === 1 ? "" : "s"}`] : [];
    });
    const peerText = peers.join("; ") || (fig.peers ? "none in this sitting" : "—");
    const runs = v.n >= 3 ? String(v.n) : `${v.n} (not a series)`;
    return `| ${fig.what}${fig.detail?.(found.summary) ?? ""} | ${spread(v, fig.unit)} | ${runs} | ${peerText} | ${found.commit} (${found.date.slice(0, 10)}) | ${machine(found.machine)} |`;
  });
}

/** The GPU check's single runs (scripts/gpu-check.sh), newest first: swarm, Optuna and the hand-written script of one sitting. */
function gpuRows(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /^gpu-check-.*\.json$/.test(f))
    .map((f) => ({ f, doc: JSON.parse(readFileSync(join(dir, f), "utf8")) as { gpu?: string; minutes?: number; side_by_side?: Record<string, number> } }))
    .filter(({ doc }) => doc.side_by_side?.swarm_test_per_seed !== undefined)
    .map(({ f, doc }) => {
      const sbs = doc.side_by_side!;
      const peers = [["Optuna", sbs.optuna_test], ["hand-written ResNet-9", sbs.handwritten_test]].filter(([, v]) => v !== undefined).map(([n, v]) => `${n} ${show(v as number, "pct")}`);
      const commit = /-([0-9a-f]{7,})\.json$/.exec(f)?.[1] ?? "unrecorded";
      const gpu = (doc.gpu ?? "GPU").split(",")[0];
      return `| ${doc.minutes} min open-ended Fashion-MNIST on one ${gpu}: test accuracy per seed | ${show(sbs.swarm_test_per_seed!, "pct")} | 1 (not a series) | ${peers.join("; ") || "—"} | ${commit} | ${gpu} (\`${f}\`) |`;
    });
}

interface TasksFile {
  commit: string;
  summarised_at: string;
  machine: Machine;
  cases: Record<string, { metric: string; swarm_test: Stat | null; swarm_ensemble_test: Stat | null; swarm_edits?: Edits; peers_test: Record<string, Stat | null>; pairs: { minutes: number }[] }>;
}

/** The runs' edits by the report's rule, summed over the series (bench/run-facts.ts). */
interface Edits {
  judged: number;
  supported: number;
  refuted: number;
}

const METRIC_NAMES: Record<string, string> = { accuracy: "accuracy", rmse: "RMSE", bits_per_byte: "bits per byte" };

/** A peer by its model's name in the series ("hist_gradient_boosting", "optuna_cnn", "kneser_ney"), as it was tuned. */
function peerName(model: string): string {
  if (model === "handwritten_lm") return "hand-written transformer or GRU, learning rate swept";
  if (model === "kneser_ney") return "Kneser-Ney n-gram, order and discount tuned";
  return `${model.replace(/^optuna_/, "").replaceAll("_", " ")} tuned by Optuna`;
}

/**
 * A row per task case and machine class (CLASSES) of the newest tasks series that has it
 * (bench/tasks-series.sh): the swarm's test figure (its best trial's seeds as an ensemble, and per
 * seed) beside its peers of the same sitting, and the previous series' figure of the case on that
 * class beside it.
 */
function taskRows(dir: string): string[] {
  const files = readdirSync(dir)
    .filter((f) => /^tasks-series-\w+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as TasksFile)
    .sort((a, b) => b.summarised_at.localeCompare(a.summarised_at));
  const names = [...new Set(files.flatMap((f) => Object.keys(f.cases)))];
  return names.flatMap((name) => {
    return byMachineClass(files.filter((f) => f.cases[name]?.swarm_ensemble_test)).map((of) => taskRow(name, of));
  });
}

/** The row of task case `name` from `files`, newest first, each of which has it. */
function taskRow(name: string, files: TasksFile[]): string {
  const [now, before] = files as [TasksFile, TasksFile?];
  const c = now.cases[name]!;
  const v = c.swarm_ensemble_test!;
  // A proportion as a percentage, as the other rows; an error metric in its units.
  const one = (v: number) => (c.metric === "accuracy" ? show(v, "pct") : v.toFixed(3));
  const num = (x: Stat) => (x.n > 1 ? `${one(x.mean)} (${one(x.min)}-${one(x.max)})` : one(x.mean));
  const perSeed = c.swarm_test ? `; per seed ${num(c.swarm_test)}` : "";
  const edits = editsText(c.swarm_edits);
  const previous = before ? `previous series ${num(before.cases[name]!.swarm_ensemble_test!)} at ${before.commit}` : "no previous series";
  const peers = Object.entries(c.peers_test).flatMap(([m, p]) => (p ? [`${peerName(m)}: ${num(p)}`] : [])).join("; ");
  const runs = v.n >= 3 ? String(v.n) : `${v.n} (not a series)`;
  return `| ${name}, ${c.pairs[0]?.minutes ?? "?"} min (bench/tasks-series.sh): test ${METRIC_NAMES[c.metric] ?? c.metric}, ensemble of the best trial's seeds${perSeed}${edits}; ${previous} | ${num(v)} | ${runs} | ${peers || "—"} | ${now.commit} (${now.summarised_at.slice(0, 10)}) | ${machine(now.machine)} |`;
}

/** The table of the result files in `dir`. */
export function headline(dir = RESULTS): string {
  const files = seriesFiles(dir);
  return [
    START,
    "| figure | mean (min-max) | runs | peer, same sitting | commit (date) | machine |",
    "|---|---|---|---|---|---|",
    ...FIGURES.flatMap((fig) => figureRows(fig, files)),
    ...taskRows(dir),
    ...gpuRows(dir),
    END,
  ].join("\n");
}

/** `text` with its headline block replaced by `table`. */
export function withHeadline(text: string, table: string): string {
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error("no headline markers");
  return text.slice(0, a) + table + text.slice(b + END.length);
}

if (process.argv[1] === import.meta.filename) {
  const table = headline();
  for (const doc of DOCS) writeFileSync(doc, withHeadline(readFileSync(doc, "utf8"), table));
  console.log(table);
}
