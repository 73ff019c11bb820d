/**
 * Goals as users write them ("Fashion-MNIST, >= 92% val accuracy, < 200k
 * params, 20 min", or with no target: "fashion-mnist: best model you can in
 * 30 minutes") turned into the `Goal` proto.
 *
 * The reader is a sequence of regex passes over one working copy of the
 * text. Each pass blanks what it consumed (same length, so offsets stay
 * valid), which is what keeps the "10" of "cifar10", the digits of a csv
 * path and the "200" of "200k params" from being read again as a target.
 */
import { create } from "@bufbuild/protobuf";
import { z } from "zod";
import { GoalSchema, type Goal } from "../proto/gen/research/v1/events_pb.js";
import { METRIC, type MetricName, type TaskName } from "./enums.js";
import { COST, COSTS, objectiveNamed, type CostName, type Objective } from "./objective.js";
import { DATASET_TABLE, datasetNamed, type DatasetName } from "./tasks/index.js";
import type { Modality } from "./tasks/task.js";
import { LEARNINGS, learningOf } from "./learning/index.js";
import { orList } from "./format.js";

/** Dataset names as the runner's DatasetSpec spells them: the built-in ones, then the task registry's (core/tasks/). */
export const DATASETS = DATASET_TABLE.map((d) => d.name) as [DatasetName, ...DatasetName[]];
export type { DatasetName, Modality };

export function datasetModality(dataset: string): Modality | undefined {
  const name = normaliseDataset(dataset);
  return name ? datasetNamed(name)?.task.modality : undefined;
}

/** The tasks (core/learning/) a goal may ask of a dataset, the first when it names no metric. */
function servesOf(dataset: DatasetName): readonly TaskName[] {
  return datasetNamed(dataset)!.serves;
}

/** The metrics a goal can decide on, for messages: "accuracy, rmse, ... or bits_per_byte". */
const METRIC_CHOICES = orList(METRIC.names);

const DATASET_PATTERNS: readonly (readonly [RegExp, DatasetName])[] = DATASET_TABLE.flatMap((d) => (d.aliases ? [[d.aliases, d.name] as const] : []));

/** Canonical dataset name for an alias ("FashionMNIST", "cifar-10", "breast-cancer"), or undefined. */
export function normaliseDataset(name: string): DatasetName | undefined {
  const trimmed = name.trim();
  if ((DATASETS as readonly string[]).includes(trimmed.toLowerCase())) return trimmed.toLowerCase() as DatasetName;
  for (const [pattern, dataset] of DATASET_PATTERNS) {
    const m = new RegExp(`^(?:${pattern.source})$`, "i").exec(trimmed);
    if (m) return dataset;
  }
  return undefined;
}

const NUM = String.raw`(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)`;
const PATH = String.raw`("[^"]+"|'[^']+'|[^\s,;]+)`;

// After "text: " with a space, only a path-like word is a path: "text: bits per byte below 2" names none.
/** Datasets a goal names by a path: "csv:PATH", "text:PATH", "signal:PATH". */
const FILE_DATASETS = DATASET_TABLE.filter((d) => d.file).map((d) => d.name);
const FILE_DATASET = new RegExp(String.raw`\b(${FILE_DATASETS.join("|")})\s*(?:[:=](?:(?=\S)|\s+(?=[./~"']))|\s(?:file\s+)?(?:at\s+)?(?=[./~]))${PATH}`, "gi");
const BARE_CSV_PATH = /(?<![\w/.~-])((?:~|\.{1,2})?\/[^\s,;]+\.(?:csv|tsv)|[\w.-]+\.(?:csv|tsv))\b/gi;
// "target: 90%" must stay a target, so a bare "target" only names a column with "=".
const TARGET_COLUMN = [
  /\b(?:target|label)[-_ ]?col(?:umn)?\s*[:=]?\s*("[^"]+"|'[^']+'|[A-Za-z_][\w.-]*)/gi,
  /\b(?:target|label)\s*=\s*("[^"]+"|'[^']+'|[A-Za-z_][\w.-]*)/gi,
];
const DATA_DIR = new RegExp(String.raw`\bdata(?:[-_ ]?dir)?\s*=\s*${PATH}`, "gi");

const COUNT_UNIT = String.raw`(k|m|b|thousand|million|billion)`;
const PARAMS_AFTER = new RegExp(String.raw`${NUM}\s*${COUNT_UNIT}?\s*(?:trainable\s+)?(?:params?|parameters?|weights)\b`, "gi");
const PARAMS_BEFORE = new RegExp(
  String.raw`\b(?:max[-_ ]?)?(?:params?|parameters?)\b\s*(?:count\s*)?(?:<=|[:=<≤]|under|below|at most|of|budget(?:\s+of)?)?\s*${NUM}\s*${COUNT_UNIT}?(?![\w%])`,
  "gi",
);
// Case matters for bare suffixes: "1M" is a million parameters, "20m" is twenty minutes.
const PARAMS_BARE = new RegExp(String.raw`(?<![\w.])${NUM}\s?([kK]|M)(?![\w%])`, "g");

const HOUR = String.raw`(?:hours?|hrs?|h)`;
const MINUTE = String.raw`(?:minutes?|mins?|m)`;
const SECOND = String.raw`(?:seconds?|secs?|s)`;
const TIME_COMPOUND = new RegExp(String.raw`${NUM}\s*${HOUR}\s*(?:and\s+)?${NUM}\s*${MINUTE}\b`, "gi");
const TIME = new RegExp(String.raw`${NUM}\s*(${HOUR}|${MINUTE}|${SECOND})\b`, "gi");

// "top-1" names the metric; its "1" is no target.
const TOP1 = /\btop[-_ ]?1\b/gi;
const PERCENT = new RegExp(String.raw`${NUM}\s*(?:%|percent\b|pct\b)`, "gi");
const BARE_NUMBER = new RegExp(String.raw`(?<![\w.])${NUM}(?![\w]|\.\d)`, "g");
const NEXT_WORD = /^\s*([a-z]+)/i;
// A bare number is a target only at the end of a phrase or before one of these ("0.95 accuracy"); "10 epochs" is not.
const ACCURACY_WORD = /^(?:val|validation|accuracy|acc|top)$/i;

// No target: find the best model within the limits. "maximum" alone is left out: "maximum 200k params" is a limit.
const OPEN_ENDED =
  /\b(?:maximi[sz](?:e|ing)|minimi[sz](?:e|ing)|optimi[sz]e|best|highest|lowest|most\s+accurate|max(?:imum)?\s+(?:val(?:idation)?\s+|test\s+)?(?:accuracy|acc)|as\s+(?:good|high|accurate|well)\s+as\s+(?:possible|(?:you|we|it)\s+can))\b/gi;
// Asking for test accuracy is no licence to search on the test split; the description says so.
const TEST_ACCURACY = /\btest(?:[-_ ](?:set|split))?[-_ ](?:accuracy|acc)\b/gi;

const OTHER_METRIC =
  /\b(macro[-_ ]?f1|micro[-_ ]?f1|f1(?:[-_ ]score)?|roc[-_ ]?auc|pr[-_ ]?auc|auc|precision|recall|loss|mse|perplexity|bleu|top[-_ ]?5)\b/gi;

// The metrics measured in their own units (a regression's, a language model's) by the words people
// use; a target follows in those units.
const UNIT_METRIC_WORDS = String.raw`(rmse|root[-_ ]mean[-_ ]squared?[-_ ]error|mae|mean[-_ ]absolute[-_ ]error|r2|r²|r\^2|r[-_ ]squared|bits?[-_ ]per[-_ ]byte|bits?/byte|bpb)`;
const UNIT_TARGET = new RegExp(
  String.raw`\b${UNIT_METRIC_WORDS}\s*(?:(?:<=|>=|<|>|≤|≥|=|:)\s*|(?:below|under|above|over|at most|at least|of|to)\s+)?(-?${NUM})(?![\w%])`,
  "gi",
);
const UNIT_METRIC = new RegExp(String.raw`\b${UNIT_METRIC_WORDS}(?![\w^²])`, "gi");

/** A target in the metric's units as a goal states it: "rmse below 55", "r2 above 0.5", "bits_per_byte below 2". */
function targetExample(o: Objective): string {
  return `${o.metric} ${o.example}`;
}

function unitMetric(word: string): MetricName {
  const w = word.toLowerCase();
  if (/^r(?:2|²|\^2|[-_ ]squared)$/.test(w)) return "r2";
  if (w.startsWith("bit") || w === "bpb") return "bits_per_byte";
  return w === "mae" || w.startsWith("mean") ? "mae" : "rmse";
}

// "pareto: accuracy vs parameters vs latency": the metric and the costs it is traded off against.
// A term is a word or a few ("val accuracy", "model size"), never a word that starts the next phrase.
const TERM = String.raw`[a-z][\w^²/-]*(?:\s+(?!(?:vs|versus|against|in|within|under|below|at|on|for|with)\b)[a-z][\w^²/-]*){0,2}`;
const PARETO = new RegExp(String.raw`\bpareto(?:[-_ ]front)?\s*(?:of\s+|[:=]\s*)?(${TERM}(?:\s+(?:vs\.?|versus|against)\s+${TERM})+)`, "gi");
const PARETO_TERMS = /\s+(?:vs\.?|versus|against)\s+/i;
const PARETO_WORD = /\bpareto\b/gi;

// Latency per example: "under 2 ms per image", "latency below 0.5ms", "300 µs an example".
const LATENCY_UNIT = String.raw`(ms|milliseconds?|µs|us|microseconds?)`;
const PER_EXAMPLE = String.raw`(?:\s*(?:per|\/|an?|each)\s*(?:image|example|sample|input|prediction|inference|row|item)s?)?(?:\s+(?:latency|inference))?`;
const LATENCY_BELOW = new RegExp(
  String.raw`(?:\blatency\s*(?:of\s+)?)?(?:(?:<=|<|≤|under|below|at\s+most|within|less\s+than|no\s+more\s+than)\s*)?${NUM}\s*${LATENCY_UNIT}\b${PER_EXAMPLE}`,
  "gi",
);
// A latency floor asks for a slower model: no goal means it.
const LATENCY_ABOVE = new RegExp(String.raw`(?:\blatency\s*)?(?:>=|>|≥|over|above|more\s+than|at\s+least)\s*${NUM}\s*${LATENCY_UNIT}\b${PER_EXAMPLE}`, "gi");
/** No forward pass of a PyTorch module on any device takes less: the call's own overhead is about this. */
const FASTEST_MS = 0.01;

function milliseconds(value: string, unit: string): number {
  return toNumber(value) / (/^(?:ms|milli)/i.test(unit) ? 1 : 1000);
}

/**
 * The metric a word names, or undefined: "accuracy", "val acc", "rmse", "validation r2" (--metric's
 * words); `prefix` is what may stand before it, `accuracy` the words for accuracy.
 */
function metricNamed(text: string, prefix = /^val(?:idation)?[-_ ]/i, accuracy = /^(?:accuracy|acc)$/i): MetricName | undefined {
  const word = text.trim().replace(prefix, "");
  if (accuracy.test(word)) return "accuracy";
  return new RegExp(`^${UNIT_METRIC_WORDS}$`, "i").test(word) ? unitMetric(word) : undefined;
}

/** A Pareto term as the metric it names: "accuracy", "test acc", "top-1", "rmse", "r2". */
function metricWord(term: string): MetricName | undefined {
  return metricNamed(term, /^(?:val(?:idation)?|test)[-_ ]/i, /^(?:accuracy|acc|top[-_ ]?1(?:[-_ ]accuracy)?)$/i);
}

function costWord(term: string): CostName | undefined {
  return COST.names.find((c) => COSTS[c].words.test(term.trim()));
}

const COUNT_MULTIPLIER: Record<string, number> = { k: 1e3, thousand: 1e3, m: 1e6, million: 1e6, b: 1e9, billion: 1e9 };

function toNumber(text: string): number {
  return Number(text.replaceAll(",", ""));
}

function count(value: string, unit: string | undefined): number {
  return Math.round(toNumber(value) * (unit ? (COUNT_MULTIPLIER[unit.toLowerCase()] ?? 1) : 1));
}

function unitSeconds(unit: string): number {
  const u = unit.toLowerCase();
  if (u.startsWith("h")) return 3600;
  if (u.startsWith("m")) return 60;
  return 1;
}

/** A parameter count from a CLI-style string: "200k", "1.5M", "50000", "200,000". */
export function parseCount(text: string): number | undefined {
  const m = new RegExp(String.raw`^\s*${NUM}\s*${COUNT_UNIT}?\s*(?:params?|parameters?)?\s*$`, "i").exec(text);
  return m?.[1] ? count(m[1], m[2]) : undefined;
}

/** Seconds from a CLI-style duration: "20m", "1h30m", "90 s", "2 hours", or a bare number of seconds. */
export function parseDuration(text: string): number | undefined {
  if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) return Number(text);
  const compound = new RegExp(`^\\s*${TIME_COMPOUND.source}\\s*$`, "i").exec(text);
  if (compound?.[1] && compound[2]) return toNumber(compound[1]) * 3600 + toNumber(compound[2]) * 60;
  const simple = new RegExp(`^\\s*${TIME.source}\\s*$`, "i").exec(text);
  return simple?.[1] && simple[2] ? toNumber(simple[1]) * unitSeconds(simple[2]) : undefined;
}

/** Percent (> 1) or fraction (<= 1) to a fraction; "92%" and "0.92" both give 0.92. */
function toFraction(value: number, percent: boolean): number {
  return percent || value > 1 ? value / 100 : value;
}

function percentLabel(fraction: number): string {
  return `${Number((fraction * 100).toFixed(4))}%`;
}

function durationLabel(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60}min`;
  return `${seconds}s`;
}

// A sentence-ending period, closing parenthesis or colon belongs to the prose, not the path ("..", though,
// is a path): "csv:/data/x.csv: reach 80%" names /data/x.csv.
function unquote(text: string): string {
  return text.replace(/^(["'])(.*)\1$/, "$2").replace(/(?<=[^.])[.):]+$/, "");
}

/** What the text says, before any override or validation; every list keeps all distinct mentions. */
export interface GoalReading {
  datasets: DatasetName[];
  dataDirs: string[];
  targetColumns: string[];
  targets: number[];
  maxParams: number[];
  timeBudgets: number[];
  otherMetrics: string[];
  /** Metrics in their own units named ("rmse", "r2", "bits per byte"), and targets stated in those units. */
  metrics: MetricName[];
  unitTargets: number[];
  /** The words that ask for no target ("maximise", "best", "as good as possible"). */
  openEnded: string[];
  /** The text names test accuracy. */
  testAccuracy: boolean;
  /** Each "pareto: a vs b vs c" as its terms. */
  pareto: string[][];
  /** "pareto" with no "a vs b" after it. */
  paretoBare: boolean;
  /** Latency limits in milliseconds per example, and latency floors as written (an error). */
  maxLatencyMs: number[];
  latencyFloors: string[];
  /** A leading "name:" that is no known dataset, for the error message. */
  unknownDataset?: string;
}

class Scanner {
  constructor(public text: string) {}

  /** Runs a global regex over the unconsumed text, blanks each match and returns the matches. */
  take(pattern: RegExp): RegExpExecArray[] {
    const found = [...this.text.matchAll(pattern)];
    for (const m of found) {
      this.text = this.text.slice(0, m.index) + " ".repeat(m[0].length) + this.text.slice(m.index + m[0].length);
    }
    return found;
  }
}

function pushDistinct<T>(list: T[], value: T): void {
  if (!list.includes(value)) list.push(value);
}

/** Reads every goal field the text mentions; never fails (parseGoal decides what is missing or contradictory). */
export function readGoalText(text: string): GoalReading {
  const s = new Scanner(text);
  const r: GoalReading = {
    datasets: [], dataDirs: [], targetColumns: [], targets: [], maxParams: [], timeBudgets: [], otherMetrics: [], metrics: [], unitTargets: [], openEnded: [], testAccuracy: false,
    pareto: [], paretoBare: false, maxLatencyMs: [], latencyFloors: [],
  };

  for (const m of s.take(FILE_DATASET)) {
    pushDistinct(r.datasets, m[1]!.toLowerCase() as DatasetName);
    pushDistinct(r.dataDirs, unquote(m[2]!));
  }
  for (const m of s.take(BARE_CSV_PATH)) {
    pushDistinct(r.datasets, "csv");
    pushDistinct(r.dataDirs, unquote(m[1]!));
  }
  for (const pattern of TARGET_COLUMN) for (const m of s.take(pattern)) pushDistinct(r.targetColumns, unquote(m[1]!));
  for (const m of s.take(DATA_DIR)) pushDistinct(r.dataDirs, unquote(m[1]!));
  for (const [pattern, dataset] of DATASET_PATTERNS) if (s.take(pattern).length) pushDistinct(r.datasets, dataset);
  // Before the parameter counts and metric words, which its terms name.
  for (const m of s.take(PARETO)) r.pareto.push(m[1]!.split(PARETO_TERMS).map((t) => t.trim().toLowerCase()));
  r.paretoBare = s.take(PARETO_WORD).length > 0;
  // Before the times: "2 ms" is no duration.
  for (const m of s.take(LATENCY_ABOVE)) r.latencyFloors.push(m[0].trim());
  for (const m of s.take(LATENCY_BELOW)) pushDistinct(r.maxLatencyMs, milliseconds(m[1]!, m[2]!));

  for (const m of [...s.take(PARAMS_AFTER), ...s.take(PARAMS_BEFORE), ...s.take(PARAMS_BARE)]) {
    pushDistinct(r.maxParams, count(m[1]!, m[2]));
  }
  for (const m of s.take(TIME_COMPOUND)) pushDistinct(r.timeBudgets, toNumber(m[1]!) * 3600 + toNumber(m[2]!) * 60);
  for (const m of s.take(TIME)) pushDistinct(r.timeBudgets, toNumber(m[1]!) * unitSeconds(m[2]!));

  for (const m of s.take(UNIT_TARGET)) {
    pushDistinct(r.metrics, unitMetric(m[1]!));
    pushDistinct(r.unitTargets, toNumber(m[2]!));
  }
  for (const m of s.take(UNIT_METRIC)) pushDistinct(r.metrics, unitMetric(m[1]!));
  s.take(TOP1);
  // Before the bare numbers: "0.95 test accuracy" is a target even though "test" is no accuracy word.
  r.testAccuracy = s.take(TEST_ACCURACY).length > 0;
  for (const m of s.take(OPEN_ENDED)) pushDistinct(r.openEnded, m[0].toLowerCase().replace(/\s+/g, " "));
  for (const m of s.take(PERCENT)) pushDistinct(r.targets, toFraction(toNumber(m[1]!), true));
  for (const m of [...s.text.matchAll(BARE_NUMBER)]) {
    const next = NEXT_WORD.exec(s.text.slice(m.index + m[0].length))?.[1];
    if (next && !ACCURACY_WORD.test(next)) continue;
    pushDistinct(r.targets, toFraction(toNumber(m[1]!), false));
  }

  for (const m of s.take(OTHER_METRIC)) pushDistinct(r.otherMetrics, m[1]!.toLowerCase());

  if (!r.datasets.length) {
    const lead = /^\s*(?:dataset\s*[:=]\s*)?([A-Za-z][\w-]*)\s*[:,]/.exec(text)?.[1];
    if (lead && !/^(?:goal|target|task|pareto)$/i.test(lead)) r.unknownDataset = lead;
  }
  return r;
}

const targetSchema = z
  .number()
  .gt(0, { error: (iss) => `target must be above 0%, got ${percentLabel(Number(iss.input))}` })
  .lte(1, { error: (iss) => `target must be at most 100%, got ${percentLabel(Number(iss.input))}` });
const maxParamsSchema = z
  .number()
  .int({ error: "max_params must be a whole number" })
  .positive({ error: "max_params must be positive" });
const timeBudgetSchema = z.number().positive({ error: "time budget must be positive" });

/** A target in the metric's units: an error or bits per byte above 0, or R² up to 1. */
function unitTargetSchema(metric: MetricName) {
  return metric === "r2"
    ? z.number().lte(1, { error: (iss) => `an R² target must be at most 1, got ${String(iss.input)}` })
    : z.number().gt(0, { error: (iss) => `a ${metric} target must be above 0, got ${String(iss.input)}` });
}

function fromText(read: (text: string) => number | undefined, what: string) {
  return (v: string | number | bigint, ctx: z.RefinementCtx<string | number | bigint>): number => {
    if (typeof v !== "string") return Number(v);
    const parsed = read(v);
    if (parsed === undefined) {
      ctx.issues.push({ code: "custom", message: `cannot read "${v}" as ${what}`, input: v });
      return z.NEVER;
    }
    return parsed;
  };
}

/** Overrides as CLI flags give them: numbers, or the same phrasing the goal text accepts ("200k", "20m", "92%"). */
export const GoalOverridesSchema = z
  .object({
    dataset: z.string().transform((v, ctx) => {
      const name = normaliseDataset(v);
      if (!name) {
        ctx.issues.push({ code: "custom", message: `unknown dataset "${v}" (known: ${DATASETS.join(", ")})`, input: v });
        return z.NEVER;
      }
      return name;
    }),
    dataDir: z.string().min(1),
    targetColumn: z.string().min(1),
    metric: z.string().transform((v, ctx): MetricName => {
      const named = metricNamed(v);
      if (named) return named;
      ctx.issues.push({ code: "custom", message: `the metric must be ${METRIC_CHOICES}, got "${v}"`, input: v });
      return z.NEVER;
    }),
    // A number here is read in the goal's metric's units (a fraction or percent for accuracy) once the metric is known.
    target: z.union([z.number(), z.string()]).transform((v, ctx) => {
      if (typeof v === "number") return { value: v, percent: false };
      const m = /^\s*(-?\d+(?:\.\d+)?|-?\.\d+)\s*(%)?\s*$/.exec(v);
      if (!m?.[1]) {
        ctx.issues.push({ code: "custom", message: `cannot read "${v}" as a target`, input: v });
        return z.NEVER;
      }
      return { value: Number(m[1]), percent: Boolean(m[2]) };
    }),
    maxParams: z.union([z.number(), z.bigint(), z.string()]).transform(fromText(parseCount, "a parameter count")).pipe(maxParamsSchema),
    timeBudgetS: z.union([z.number(), z.string()]).transform(fromText(parseDuration, "a duration")).pipe(timeBudgetSchema),
  })
  .partial()
  .strict();
export type GoalOverrides = z.input<typeof GoalOverridesSchema>;

/** The goal after merging text and overrides; no target means open-ended, 0 for max_params / time budget "no limit". */
const ResolvedGoalSchema = z
  .object({
    dataset: z.enum(DATASETS),
    dataDir: z.string(),
    targetColumn: z.string(),
    metric: z.enum(METRIC.names),
    target: z.number().optional(),
    maxParams: maxParamsSchema.optional(),
    timeBudgetS: timeBudgetSchema.optional(),
    tradeOffs: z.array(z.enum(COST.names)),
    maxLatencyMs: z
      .number()
      .gte(FASTEST_MS, { error: (iss) => `a latency limit of ${String(iss.input)} ms per example is impossible: no PyTorch forward pass takes under ${FASTEST_MS} ms` })
      .optional(),
  })
  .superRefine((g, ctx) => {
    if (g.target !== undefined) {
      const check = g.metric === "accuracy" ? targetSchema : unitTargetSchema(g.metric);
      for (const issue of check.safeParse(g.target).error?.issues ?? []) ctx.addIssue({ code: "custom", path: ["target"], message: issue.message });
    }
    const task = objectiveNamed(g.metric).task;
    const serves = servesOf(g.dataset);
    if (!serves.includes(task)) {
      const decidesOn = serves.flatMap((t) => Object.keys(LEARNINGS[t].metrics));
      ctx.addIssue({ code: "custom", path: ["metric"], message: learningOf(task).refusal({ dataset: g.dataset, metric: g.metric, serves, decidesOn }) });
    }
    const file = datasetNamed(g.dataset)!.file;
    if (file && !g.dataDir) ctx.addIssue({ code: "custom", path: ["dataDir"], message: `${g.dataset} needs a path, e.g. "${file.example(task)}"` });
    // The runner needs the label column; said here, a missing one costs no swarm start.
    const missing = file && g.dataDir && !g.targetColumn ? file.missingTarget(g.dataDir) : undefined;
    if (missing) ctx.addIssue({ code: "custom", path: ["targetColumn"], message: missing });
  });

export type GoalParse = { ok: true; goal: Goal } | { ok: false; error: string };

type ResolvedGoal = z.output<typeof ResolvedGoalSchema>;

/** What the run will do, in words: the Goal's description. */
function describeGoal(g: ResolvedGoal, testAccuracy: boolean): string {
  const data = g.dataDir ? `${g.dataset} (${g.dataDir})` : g.dataset;
  const o = objectiveNamed(g.metric);
  const until = "until the trial or time budget is spent or it plateaus";
  const versus = [o.proportion ? "validation accuracy" : `validation ${o.label}`, ...g.tradeOffs.map((c) => COSTS[c].label)].join(" vs ");
  const parts = [
    g.tradeOffs.length
      ? `find the Pareto front of ${versus} on ${data}: no target; ${o.higherIsBetter ? "maximise" : "minimise"} the metric and minimise the ${g.tradeOffs.length > 1 ? "costs" : "cost"} ${until}`
      : o.proportion
      ? g.target !== undefined
        ? `reach ${percentLabel(g.target)} validation accuracy on ${data} (95% CI lower bound)`
        : `find the most accurate model on ${data}: no target; maximise validation accuracy ${until}`
      : g.target !== undefined
        ? `reach validation ${o.label} ${g.target} or ${o.higherIsBetter ? "higher" : "lower"} on ${data} (95% CI ${o.higherIsBetter ? "lower" : "upper"} bound)`
        : `find the model with the ${o.higherIsBetter ? "highest" : "lowest"} validation ${o.label} on ${data}: no target; ${o.higherIsBetter ? "maximise" : "minimise"} it ${until}`,
  ];
  if (g.maxParams !== undefined) parts.push(`at most ${g.maxParams.toLocaleString("en-US")} parameters`);
  if (g.maxLatencyMs !== undefined) parts.push(`at most ${g.maxLatencyMs} ms per example (batch 1, on the runner's device)`);
  if (g.timeBudgetS !== undefined) parts.push(`within ${durationLabel(g.timeBudgetS)}`);
  const text = parts.join(", ");
  return testAccuracy ? `${text}; the search never uses the test split: the best model's test accuracy is measured once at the end` : text;
}

function understood(
  r: { dataset?: string; dataDir?: string; targetColumn?: string; metric: MetricName; target?: number; maxParams?: number; timeBudgetS?: number; tradeOffs: CostName[]; maxLatencyMs?: number },
  openEnded: boolean,
): string {
  const parts: string[] = [];
  if (r.dataset) parts.push(`dataset=${r.dataset}`);
  if (r.dataDir) parts.push(`path=${r.dataDir}`);
  if (r.targetColumn) parts.push(`target_column=${r.targetColumn}`);
  if (r.metric !== "accuracy") parts.push(`metric=${r.metric}`);
  if (r.target !== undefined) parts.push(`target=${r.metric === "accuracy" ? percentLabel(r.target) : r.target}`);
  if (r.tradeOffs.length) parts.push(`pareto=${[r.metric, ...r.tradeOffs].join(" vs ")}`);
  else if (openEnded) parts.push("no target (best model)");
  if (r.maxParams !== undefined) parts.push(`max_params=${r.maxParams}`);
  if (r.maxLatencyMs !== undefined) parts.push(`max_latency=${r.maxLatencyMs}ms`);
  if (r.timeBudgetS !== undefined) parts.push(`time_budget=${durationLabel(r.timeBudgetS)}`);
  return parts.length ? parts.join(", ") : "nothing";
}

/** One value per field: the override, else the single distinct mention; several distinct mentions are a contradiction. */
function single<T>(override: T | undefined, mentions: T[], field: string, show: (v: T) => string, problems: string[]): T | undefined {
  if (override !== undefined) return override;
  if (mentions.length > 1) problems.push(`found several ${field} (${mentions.map(show).join(", ")})`);
  return mentions[0];
}

/**
 * A Pareto goal's metric and costs from its terms ("accuracy vs parameters vs latency"): one
 * metric and at least one cost, each named once; what is wrong goes to `problems`.
 */
function paretoOf(r: GoalReading, problems: string[]): { metric: MetricName; costs: CostName[] } | undefined {
  const costList = orList(COST.names.map((c) => COSTS[c].label));
  if (r.paretoBare || r.pareto.length > 1) {
    problems.push(`a Pareto goal names what it trades off once, e.g. "pareto: accuracy vs parameters vs latency"`);
    return undefined;
  }
  const terms = r.pareto[0];
  if (!terms) return undefined;
  const metrics = terms.flatMap((t) => metricWord(t) ?? []);
  const costs = terms.flatMap((t) => costWord(t) ?? []);
  const unknown = terms.filter((t) => !metricWord(t) && !costWord(t));
  if (unknown.length) problems.push(`a Pareto goal trades the metric off against ${costList}; ${unknown.map((t) => `"${t}"`).join(", ")} is none of them`);
  else if (metrics.length !== 1) problems.push(`a Pareto goal trades one metric off against ${costList}, got ${metrics.length ? metrics.join(" and ") : "none"}`);
  else if (new Set(costs).size !== costs.length) problems.push(`a Pareto goal names each of its objectives once`);
  else return { metric: metrics[0]!, costs };
  return undefined;
}

/**
 * The Goal proto from the user's words; overrides (CLI flags) win field by
 * field and also settle a field the text states twice. Errors say what was
 * understood so the user can fix only what is missing.
 */
export function parseGoal(text: string, overrides: GoalOverrides = {}): GoalParse {
  const o = GoalOverridesSchema.safeParse(overrides);
  if (!o.success) {
    return { ok: false, error: `invalid override: ${o.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}` };
  }
  const over = o.data;
  const r = readGoalText(text);
  const problems: string[] = [];

  const dataset = single(over.dataset, r.datasets, "datasets", String, problems);
  const pareto = paretoOf(r, problems);
  if (pareto?.metric) pushDistinct(r.metrics, pareto.metric);
  // Unnamed, the metric is the dataset's: RMSE for a numeric target, else accuracy.
  const metric = single(over.metric, r.metrics, "metrics", String, problems) ?? (dataset ? (Object.keys(LEARNINGS[servesOf(dataset)[0]!].metrics)[0] as MetricName) : "accuracy");
  const goalObjective = objectiveNamed(metric);
  const inUnits = !goalObjective.proportion;
  // Accuracy targets are fractions or percentages; other metrics' are in their own units.
  const overTarget = over.target && (inUnits ? over.target.value : toFraction(over.target.value, over.target.percent));
  const stated = inUnits ? r.unitTargets : r.targets;
  const showTarget = (v: number) => (inUnits ? `${metric} ${v}` : percentLabel(v));
  const values = {
    dataset,
    dataDir: single(over.dataDir, r.dataDirs, "data paths", String, problems),
    targetColumn: single(over.targetColumn, r.targetColumns, "target columns", String, problems),
    metric,
    target: single(overTarget, stated, "targets", showTarget, problems),
    maxParams: single(over.maxParams, r.maxParams, "parameter limits", String, problems),
    timeBudgetS: single(over.timeBudgetS, r.timeBudgets, "time budgets", durationLabel, problems),
    tradeOffs: pareto?.costs ?? [],
    maxLatencyMs: single(undefined, r.maxLatencyMs, "latency limits", (v) => `${v} ms`, problems),
  };
  if (r.latencyFloors.length) {
    problems.push(`a latency limit is an upper bound (e.g. "under 2 ms per image"), not ${r.latencyFloors.map((f) => `"${f}"`).join(", ")}`);
  }
  if (!over.metric && r.otherMetrics.length) {
    problems.push(`a goal decides on ${METRIC_CHOICES}, not ${r.otherMetrics.join(", ")}`);
  }
  if (inUnits && r.targets.length) {
    problems.push(`a ${metric} target is in the metric's own units (e.g. "${targetExample(goalObjective)}"), not ${r.targets.map(percentLabel).join(", ")}`);
  }
  // An override target settles it; in the text alone, "maximise" next to "90%" leaves the stop rule unclear.
  // A Pareto goal has no target, whether or not its terms are right.
  const asksPareto = r.pareto.length > 0 || r.paretoBare;
  if (asksPareto) r.openEnded.push("pareto");
  const openEnded = over.target === undefined && r.openEnded.length > 0;
  if (openEnded && stated.length) {
    problems.push(`asks for the best model possible (${r.openEnded.map((w) => `"${w}"`).join(", ")}) and for a target (${stated.map(showTarget).join(", ")}); keep one`);
  }

  const missing: string[] = [];
  if (!values.dataset) missing.push(r.unknownDataset ? `a known dataset ("${r.unknownDataset}" is not one)` : "a dataset");
  if (values.target === undefined && !openEnded) {
    missing.push(
      inUnits
        ? `a target (e.g. "${targetExample(goalObjective)}", or "${goalObjective.higherIsBetter ? "maximise" : "minimise"} ${metric}" for the best model within the limits)`
        : 'a target accuracy (or "maximise accuracy" for the best model within the limits)',
    );
  }
  if (missing.length) problems.unshift(`could not find ${missing.join(" or ")}`);

  if (!problems.length) {
    const resolved = ResolvedGoalSchema.safeParse({
      ...values,
      target: openEnded ? undefined : values.target,
      dataDir: values.dataDir ?? "",
      targetColumn: values.targetColumn ?? "",
    });
    if (resolved.success) return { ok: true, goal: goalMessage(text, resolved.data, r.testAccuracy) };
    problems.push(...resolved.error.issues.map((i) => i.message));
  }
  return { ok: false, error: refusal(text, problems, values, goalObjective, openEnded, asksPareto) };
}

/** The Goal proto of a resolved goal, as the runner and the agents read it. */
function goalMessage(text: string, g: ResolvedGoal, testAccuracy: boolean): Goal {
  return create(GoalSchema, {
    rawText: text,
    dataset: g.dataset,
    dataDir: g.dataDir,
    objective: METRIC.value(g.metric),
    // The runner reads target 0 as "no target" (GoalStatus NO_TARGET).
    target: g.target ?? 0,
    openEnded: g.target === undefined,
    maxParams: BigInt(g.maxParams ?? 0),
    timeBudgetS: g.timeBudgetS ?? 0,
    targetColumn: g.targetColumn,
    tradeOffs: g.tradeOffs.map((c) => COST.value(c)!),
    maxLatencyMs: g.maxLatencyMs ?? 0,
    description: describeGoal(g, testAccuracy),
  });
}

/** A goal's refusal in one line: its problems, what was understood, the known datasets when none was, and a goal to copy. */
function refusal(text: string, problems: string[], values: Parameters<typeof understood>[0] & { dataset?: DatasetName }, goalObjective: Objective, openEnded: boolean, asksPareto: boolean): string {
  const [first, ...rest] = problems;
  const hint = values.dataset
    ? ""
    : ` Known datasets: ${[...DATASET_TABLE.filter((d) => !d.file).map((d) => d.name), ...DATASET_TABLE.flatMap((d) => (d.file ? [d.file.usage] : []))].join(", ")}.`;
  // The example keeps what was understood of a file dataset: its path and column are the hard part to phrase.
  const file = values.dataset && datasetNamed(values.dataset)?.file;
  const name = file ? file.example(goalObjective.task, values) : (values.dataset ?? "fashion-mnist");
  // An example in the metric's units only where the dataset can be scored by it.
  const fits = !goalObjective.proportion && values.dataset !== undefined && servesOf(values.dataset).includes(goalObjective.task);
  const example = `${name}: ${asksPareto ? "pareto: accuracy vs parameters vs latency" : openEnded ? "best model you can in 30 minutes" : fits ? targetExample(goalObjective) : "reach 90% validation accuracy"}`;
  return `${first} in "${text}"${rest.map((p) => `; ${p}`).join("")}; understood: ${understood(values, openEnded)}.${hint} Write e.g. "${example}"`;
}
