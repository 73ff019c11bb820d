/**
 * A goal as users write it turned into the `Goal` proto: its words read (core/goal-words.ts),
 * then checked against each other, the dataset and its task, or refused in one line that says
 * what was understood and what is missing.
 */
import { create } from "@bufbuild/protobuf";
import { z } from "zod";
import { GoalSchema, type Goal } from "../proto/gen/research/v1/events_pb.js";
import { METRIC, type MetricName, type TaskName } from "./enums.js";
import { COST, COSTS, objectiveNamed, type CostName, type Objective } from "./objective.js";
import { DATASET_TABLE, datasetNamed, type DatasetName } from "./tasks/index.js";
import { LEARNINGS, learningOf } from "./learning/index.js";
import { int, orList } from "./format.js";
import { costWord, DATASETS, metricNamed, metricWord, normaliseDataset, parseCount, parseDuration, pushDistinct, readGoalText, toFraction, type GoalReading } from "./goal-words.js";


/** The metrics a goal can decide on, for messages: "accuracy, rmse, ... or bits_per_byte". */
const METRIC_CHOICES = orList(METRIC.names);

/** The tasks (core/learning/) a goal may ask of a dataset, the first when it names no metric. */
function servesOf(dataset: DatasetName): readonly TaskName[] {
  return datasetNamed(dataset)!.serves;
}

/** A target in the metric's units as a goal states it: "rmse below 55", "r2 above 0.5", "bits_per_byte below 2". */
function targetExample(o: Objective): string {
  return `${o.metric} ${o.example}`;
}

function durationLabel(seconds: number): string {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60}min`;
  return `${seconds}s`;
}

function percentLabel(fraction: number): string {
  return `${Number((fraction * 100).toFixed(4))}%`;
}

/** No forward pass of a PyTorch module on any device takes less: the call's own overhead is about this. */
const FASTEST_MS = 0.01;

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
  if (g.maxParams !== undefined) parts.push(`at most ${int(g.maxParams)} parameters`);
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
