/**
 * The words of a goal as users write them ("Fashion-MNIST, >= 92% val accuracy, < 200k
 * params, 20 min", or with no target: "fashion-mnist: best model you can in 30 minutes"):
 * every dataset, metric, target, limit and budget it mentions, read, not yet judged
 * (core/goal.ts turns a reading into the `Goal` proto or a refusal).
 *
 * The reader is a sequence of regex passes over one working copy of the
 * text. Each pass blanks what it consumed (same length, so offsets stay
 * valid), which is what keeps the "10" of "cifar10", the digits of a csv
 * path and the "200" of "200k params" from being read again as a target.
 */
import { type MetricName } from "./enums.js";
import { COST, COSTS, type CostName } from "./objective.js";
import { DATASET_TABLE, datasetNamed, type DatasetName } from "./tasks/index.js";
import type { Modality } from "./tasks/task.js";

/** Dataset names as the runner's DatasetSpec spells them: the built-in ones, then the task registry's (core/tasks/). */
export const DATASETS = DATASET_TABLE.map((d) => d.name) as [DatasetName, ...DatasetName[]];
export type { DatasetName, Modality };

export function datasetModality(dataset: string): Modality | undefined {
  const name = normaliseDataset(dataset);
  return name ? datasetNamed(name)?.task.modality : undefined;
}

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

function milliseconds(value: string, unit: string): number {
  return toNumber(value) / (/^(?:ms|milli)/i.test(unit) ? 1 : 1000);
}

/**
 * The metric a word names, or undefined: "accuracy", "val acc", "rmse", "validation r2" (--metric's
 * words); `prefix` is what may stand before it, `accuracy` the words for accuracy.
 */
export function metricNamed(text: string, prefix = /^val(?:idation)?[-_ ]/i, accuracy = /^(?:accuracy|acc)$/i): MetricName | undefined {
  const word = text.trim().replace(prefix, "");
  if (accuracy.test(word)) return "accuracy";
  return new RegExp(`^${UNIT_METRIC_WORDS}$`, "i").test(word) ? unitMetric(word) : undefined;
}

/** A Pareto term as the metric it names: "accuracy", "test acc", "top-1", "rmse", "r2". */
export function metricWord(term: string): MetricName | undefined {
  return metricNamed(term, /^(?:val(?:idation)?|test)[-_ ]/i, /^(?:accuracy|acc|top[-_ ]?1(?:[-_ ]accuracy)?)$/i);
}

export function costWord(term: string): CostName | undefined {
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
export function toFraction(value: number, percent: boolean): number {
  return percent || value > 1 ? value / 100 : value;
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

export function pushDistinct<T>(list: T[], value: T): void {
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

