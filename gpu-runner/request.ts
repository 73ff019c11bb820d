/**
 * Checks an evaluation request and turns it into the worker's job spec with
 * every default filled in. The wire format uses 0 / "" / unspecified for "not
 * set"; the defaults below, core/defaults.ts and (for the recipe) the train_config
 * schema through core/recipe.ts are the runner's documented
 * behaviour (docs/ARCHITECTURE.md, "Runner defaults"). The Python worker takes
 * no defaults of its own, so every spec built here carries every field.
 */
import { resolve, sep } from "node:path";
import { DEFAULT_SEEDS } from "../core/defaults.js";
import { SCRIPT_LANGUAGE } from "../core/enums.js";
import { learningOf } from "../core/learning/index.js";
import { trainConfigOfRecipe } from "../core/recipe.js";
import { ResearchError } from "../core/failure.js";
import { InputDtypeSchema } from "../core/model-config.js";
import { DATASETS } from "../core/goal-words.js";
import { datasetNamed } from "../core/tasks/index.js";
import { objective } from "../core/objective.js";
import {
  Task,
  type DatasetSpec,
  type EvaluateRequest,
  type ModelSource,
  type Recipe,
  type ScriptRequest,
  type SummarizeRequest,
} from "../proto/gen/research/v1/runner_pb.js";
import { kwargsSent } from "../core/config-wire.js";
import { isRecord } from "../core/json.js";

export const DEFAULTS = {
  seeds: DEFAULT_SEEDS,
  maxSeeds: 32,
  /** The most seeds one job trains together (python/specs.py MAX_TOGETHER). */
  maxTogether: 8,
  timeBudgetS: 600,
  memoryLimitMb: 4096,
  /** The largest file a job writes: a kept model's weights (a language model's counts among them, core/compiler/blocks.py ByteCounts.MAX_BYTES). */
  fileLimitMb: 256,
  nproc: 256,
} as const;

export const SCRIPT = {
  defaultTimeoutS: 30,
  maxTimeoutS: 120,
  sourceBytes: 256 * 1024,
  files: 1000,
  fileBytes: 1024 * 1024,
  filesBytes: 8 * 1024 * 1024,
  // Writing the files in and collecting them afterwards happen inside the job's wall clock too.
  graceS: 15,
} as const;

export interface Limits {
  memory_mb: number;
  cpu_seconds: number;
  wall_seconds: number;
  file_mb: number;
  nproc: number;
  /** Share of the GPU's memory the job may allocate (torch.cuda.set_per_process_memory_fraction); 0: no cap. */
  gpu_memory_fraction: number;
}

class Issues {
  readonly list: string[] = [];
  check(ok: boolean, message: string): void {
    if (!ok) this.list.push(message);
  }
  throwIfAny(what: string): void {
    if (this.list.length) throw new ResearchError("invalid_config", `invalid ${what}: ${this.list.join("; ")}`);
  }
}

function checkModel(model: ModelSource | undefined, issues: Issues): Record<string, unknown> {
  issues.check(!!model?.code.trim(), "model.code is empty");
  issues.check(/^[A-Za-z_][A-Za-z0-9_]*$/.test(model?.className ?? ""), `model.class_name "${model?.className ?? ""}" is not a Python identifier`);
  const kwargs = model ? kwargsSent(model) : {};
  issues.check(kwargs === undefined || isRecord(kwargs), "model.init_kwargs_json must be a JSON object");
  return isRecord(kwargs) ? kwargs : {};
}

function under(path: string, roots: string[]): boolean {
  const p = resolve(path);
  return roots.some((r) => p === resolve(r) || p.startsWith(resolve(r) + sep));
}

function checkDataset(d: DatasetSpec | undefined, dataRoots: string[], issues: Issues) {
  const name = d?.name ?? "";
  issues.check((DATASETS as readonly string[]).includes(name), `dataset.name "${name}" is not one of ${DATASETS.join(", ")}`);
  // 0: the worker's default, which needs the pool's size (datasets.val_count).
  const valFraction = d?.valFraction ?? 0;
  issues.check(valFraction >= 0 && valFraction < 0.9, `dataset.val_fraction ${valFraction} must be in [0, 0.9)`);
  if (d?.dataDir) {
    issues.check(
      under(d.dataDir, dataRoots),
      `dataset.data_dir ${d.dataDir} is outside the runner's data roots (${dataRoots.join(", ")}); start the runner with --data-root`,
    );
  }
  // A person's files have no standard place; which column a file needs is the worker's to check (specs.py).
  if (datasetNamed(name)?.file) issues.check(!!d?.dataDir, `dataset.data_dir is required for ${name}`);
  if (datasetNamed(name)?.generated) {
    issues.check((d?.shape.length ?? 0) > 0, `dataset.shape is required for ${name}`);
    issues.check((d?.numClasses ?? 0) >= 2, `dataset.num_classes >= 2 is required for ${name}`);
    issues.check((d?.difficulty ?? 0) >= 0 && (d?.difficulty ?? 0) <= 1, "dataset.difficulty must be in [0, 1]");
  }
  return {
    name,
    data_dir: d?.dataDir ?? "",
    subset: d?.subset ?? 0,
    val_fraction: valFraction,
    split_seed: d?.splitSeed ?? 0,
    target_column: d?.targetColumn ?? "",
    shape: d?.shape ?? [],
    num_classes: d?.numClasses ?? 0,
    difficulty: d?.difficulty ?? 0,
    test_subset: d?.testSubset ?? 0,
    task: learningOf(d?.task ?? Task.UNSPECIFIED).name,
  };
}

/** The worker's recipe: every field, from the one schema (core/recipe.ts); `subset` goes in the dataset spec. */
function checkRecipe(r: Recipe | undefined, issues: Issues) {
  const parsed = trainConfigOfRecipe(r);
  if (!parsed.ok) {
    issues.check(false, parsed.error);
    return undefined;
  }
  const { subset: _inDatasetSpec, ...recipe } = parsed.value;
  return recipe;
}

export function limitsFor(wallSeconds: number, memoryMb: number, threads: number, gpuMemoryFraction = 0): Limits {
  const wall = Math.max(1, Math.ceil(wallSeconds));
  return {
    memory_mb: memoryMb,
    // CPU time can exceed wall time by the thread count; the wall clock is the real bound.
    cpu_seconds: Math.ceil(wall * Math.max(1, threads) * 1.5) + 30,
    wall_seconds: wall,
    file_mb: DEFAULTS.fileLimitMb,
    nproc: DEFAULTS.nproc,
    gpu_memory_fraction: gpuMemoryFraction,
  };
}

export function planEvaluation(req: EvaluateRequest, dataRoots: string[]) {
  const issues = new Issues();
  const initKwargs = checkModel(req.model, issues);
  const dataset = checkDataset(req.dataset, dataRoots, issues);
  const recipe = checkRecipe(req.recipe, issues);
  const seeds = req.seeds || DEFAULTS.seeds;
  issues.check(seeds <= DEFAULTS.maxSeeds, `seeds ${seeds} is more than ${DEFAULTS.maxSeeds}`);
  const goal = objective(req.metric);
  issues.check(
    dataset.task === goal.task,
    `metric ${goal.metric} is for ${goal.task}, and dataset ${dataset.name} is asked for ${dataset.task}: set dataset.task to ${goal.task}`,
  );
  issues.check(req.target >= 0 && (!goal.proportion || req.target <= 1) && Number.isFinite(req.target), `target ${req.target} must be ${goal.proportion ? "a fraction in [0, 1]" : "a finite number >= 0"}`);
  const timeBudgetS = req.budget?.timeBudgetS || DEFAULTS.timeBudgetS;
  issues.check(timeBudgetS > 0 && Number.isFinite(timeBudgetS), `budget.time_budget_s ${timeBudgetS} must be positive`);
  const memoryLimitMb = req.budget?.memoryLimitMb || DEFAULTS.memoryLimitMb;
  issues.check(memoryLimitMb >= 512, `budget.memory_limit_mb ${memoryLimitMb} is below 512 (torch alone needs more)`);
  issues.check(!(req.keepWeights && req.weightsOf), "keep_weights and weights_of exclude each other: kept weights are never trained again");
  const init = req.initWeights;
  issues.check(!init || (init.runId !== "" && init.trialId !== ""), "init_weights needs both run_id and trial_id");
  issues.check(!(init && req.weightsOf), "init_weights and weights_of exclude each other: the one trains from kept weights, the other evaluates them untrained");
  const deadlineS = req.budget?.deadlineS ?? 0;
  issues.check(deadlineS >= 0 && Number.isFinite(deadlineS), `budget.deadline_s ${deadlineS} must be a finite number >= 0`);
  const maxLatencyMs = req.budget?.maxLatencyMs ?? 0;
  issues.check(maxLatencyMs >= 0 && Number.isFinite(maxLatencyMs), `budget.max_latency_ms ${maxLatencyMs} must be a finite number >= 0`);
  issues.throwIfAny("evaluation request");
  return {
    seeds,
    baseSeed: req.baseSeed,
    target: req.target,
    objective: goal,
    timeBudgetS,
    memoryLimitMb,
    deadlineS,
    job: {
      source: req.model!.code,
      class_name: req.model!.className,
      init_kwargs: initKwargs,
      dataset,
      recipe: recipe!,
      max_params: Number(req.budget?.maxParams ?? 0n),
      max_latency_ms: maxLatencyMs,
      evaluate_test: req.evaluateTest,
      measure_inference: req.measureInference,
      weights: req.weightsOf ? "load" : req.keepWeights ? "keep" : "",
      // Each seed of a job starts from a file of weights (python/zygote.py JOB_FILES "init").
      init: init !== undefined,
      // The evaluator answers each epoch it scores, whether it is the seed's best so far (python/trainer.py _BestEpoch).
      verdicts: true,
    },
  };
}

export function planSummary(req: SummarizeRequest) {
  const issues = new Issues();
  const initKwargs = checkModel(req.model, issues);
  issues.check(req.inputShape.length > 0 && req.inputShape.every((d) => d > 0), "input_shape must be non-empty and positive");
  const dtype = req.inputDtype || InputDtypeSchema.options[0];
  issues.check(InputDtypeSchema.safeParse(dtype).success, `input_dtype "${dtype}" must be one of ${InputDtypeSchema.options.join(", ")}`);
  issues.throwIfAny("summarize request");
  return {
    source: req.model!.code,
    class_name: req.model!.className,
    init_kwargs: initKwargs,
    input_shape: req.inputShape,
    input_dtype: dtype,
    num_classes: req.numClasses,
    task: learningOf(req.task).name,
    // Absent: the worker's default, the text loader's hashing vocabulary.
    ...(req.vocabSize && { vocab_size: req.vocabSize }),
  };
}

export function planDescribe(d: DatasetSpec | undefined, dataRoots: string[]) {
  const issues = new Issues();
  const dataset = checkDataset(d, dataRoots, issues);
  issues.throwIfAny("describe request");
  return { dataset };
}

/** A relative path that stays inside the directory it is joined to. */
function isInnerPath(path: string): boolean {
  return !path.includes("\0") && path.split("/").every((part) => part !== "" && part !== "." && part !== "..");
}

export function planScript(req: ScriptRequest) {
  const issues = new Issues();
  const language = SCRIPT_LANGUAGE.name(req.language);
  issues.check(language !== undefined, `language ${req.language} is not one of ${SCRIPT_LANGUAGE.names.join(", ")}`);
  issues.check(req.source.trim() !== "", "source is empty");
  const sourceBytes = Buffer.byteLength(req.source);
  issues.check(sourceBytes <= SCRIPT.sourceBytes, `source has ${sourceBytes} bytes; at most ${SCRIPT.sourceBytes} are allowed`);
  const timeoutS = req.timeoutS || SCRIPT.defaultTimeoutS;
  issues.check(timeoutS > 0 && timeoutS <= SCRIPT.maxTimeoutS, `timeout_s ${timeoutS} must be in (0, ${SCRIPT.maxTimeoutS}]`);
  const files = Object.entries(req.files);
  issues.check(files.length <= SCRIPT.files, `${files.length} files; at most ${SCRIPT.files} are allowed`);
  let total = 0;
  for (const [path, text] of files) {
    const bytes = Buffer.byteLength(text);
    total += bytes;
    issues.check(isInnerPath(path), `files: "${path}" is not a relative path inside the working directory`);
    issues.check(bytes <= SCRIPT.fileBytes, `files: "${path}" has ${bytes} bytes; at most ${SCRIPT.fileBytes} are allowed per file`);
  }
  issues.check(total <= SCRIPT.filesBytes, `files have ${total} bytes in all; at most ${SCRIPT.filesBytes} are allowed`);
  issues.throwIfAny("script request");
  return { timeoutS, job: { language, source: req.source, timeout_s: timeoutS, files: req.files } };
}
