/**
 * quick-evaluator: evaluate one PyTorch model file on a dataset with several
 * seeds and print mean, 95% CI and goal status. Starts a runner of its own
 * unless --runner points at one.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { protoJson } from "../core/proto-json.js";
import { ResearchError } from "../core/failure.js";
import { cliConfig } from "../core/config.js";
import { createLogger, type Logger } from "../core/logger.js";
import { DATASETS } from "../core/goal-words.js";
import { datasetNamed } from "../core/tasks/index.js";
import { DEFAULTS } from "../gpu-runner/request.js";
import { DEFAULT_LR, RECIPE_DEFAULTS } from "../core/space.js";
import { OPTIMIZER, SCHEDULE, type ClosedSet } from "../core/enums.js";
import { connectRunner, evaluateToResult } from "../gpu-runner/client.js";
import { parseDevice, type RunnerDevice } from "../gpu-runner/device.js";
import { startRunner, type RunningRunner } from "../gpu-runner/server.js";
import { EvalResultSchema, GoalStatus, type EvalResult, type EvaluateEvent } from "../proto/gen/research/v1/runner_pb.js";
import { parseFraction, parsePositiveInt, Progress } from "./format.js";
import { EXIT } from "./args.js";
import { cudaProblem, dataProblem, modelFileProblem } from "./preflight.js";
import { int, pct } from "../core/format.js";

const HELP = `quick-evaluator — multi-seed evaluation of one PyTorch model

usage: quick-evaluator --model FILE.py --class NAME --dataset NAME [options]

  --model FILE.py        Python file defining an nn.Module subclass
  --class NAME           the class to instantiate (no required constructor args)
  --dataset NAME         ${DATASETS.join(", ")}
  --data-dir DIR         dataset location (default: the dataset's standard path;
                         fashion-mnist: /usr/share/datasets/fashion-mnist)
  --target-column COL    csv only: the label column
  --subset N             stratified training subset (default: all)
  --epochs N             default ${RECIPE_DEFAULTS.epochs}
  --train-seconds S      stop each seed's training S seconds after its first step, mid-epoch if
                         need be, --epochs the most it may reach; cosine and one-cycle anneal
                         over that time (how a run's last long training trains)
  --seeds N              default ${DEFAULTS.seeds}
  --batch-size N         default ${RECIPE_DEFAULTS.batchSize}
  --lr X                 default: ${Object.entries(DEFAULT_LR).map(([o, lr]) => `${lr} for ${o}`).join(", ")}
  --optimizer NAME       ${OPTIMIZER.names.join(", ")} (default ${RECIPE_DEFAULTS.optimizer})
  --schedule NAME        ${SCHEDULE.names.join(", ")} (default ${RECIPE_DEFAULTS.schedule})
  --ema-decay X          evaluate an exponential moving average of the weights
                         with this decay, in [0, 1), e.g. 0.999 (default 0: off)
  --amp                  mixed precision on CUDA (bf16 where the GPU has it, else fp16)
  --channels-last        channels-last memory for image models (faster convolutions on CPUs and GPUs;
                         a model whose code cannot run in it trains in its own layout)
  --deterministic        bit-for-bit repeatable training where torch allows it
  --device NAME          auto, cpu or cuda, for the runner this command starts
                         (default auto: the GPUs when there are any)
  --target X             goal for validation accuracy: 0.9 or 90 (percent)
  --time-budget SECONDS  wall-clock budget per seed, from its start (default ${DEFAULTS.timeBudgetS})
  --memory-limit MB      address-space limit per seed worker (default ${DEFAULTS.memoryLimitMb})
  --max-params N         fail before training when the model is larger
  --test                 also evaluate on the held-out test split
  --json                 print only the result JSON on stdout
  --runner HOST:PORT     use a running runner instead of starting one
  --unsafe-no-sandbox    run the model without bubblewrap (only for code you trust)
  -h, --help

exit status: 0 when the evaluation completed, 1 when the trial failed or no
runner could start (the failure label and message are printed), 2 on usage
errors and a model file that does not parse (research-agent's numbers).`;

function usage(message: string): never {
  process.stderr.write(`quick-evaluator: ${message}\nrun with --help for usage\n`);
  process.exit(EXIT.badInput);
}

const FLAGS = {
  model: { type: "string" },
  class: { type: "string" },
  dataset: { type: "string" },
  "data-dir": { type: "string" },
  "target-column": { type: "string" },
  subset: { type: "string" },
  epochs: { type: "string" },
  "train-seconds": { type: "string" },
  seeds: { type: "string" },
  "batch-size": { type: "string" },
  lr: { type: "string" },
  optimizer: { type: "string" },
  schedule: { type: "string" },
  "ema-decay": { type: "string" },
  amp: { type: "boolean" },
  "channels-last": { type: "boolean" },
  deterministic: { type: "boolean" },
  device: { type: "string" },
  target: { type: "string" },
  "time-budget": { type: "string" },
  "memory-limit": { type: "string" },
  "max-params": { type: "string" },
  test: { type: "boolean" },
  json: { type: "boolean" },
  runner: { type: "string" },
  "unsafe-no-sandbox": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof FLAGS }>>["values"];

/**
 * The evaluation the flags ask for, every flag checked (a bad one: usage, exit 1) before a runner
 * starts, so a bad flag starts nothing; with the device and the data folder the runner needs.
 */
function requestOf(a: Flags) {
  if (!a.model || !a.class || !a.dataset) usage("--model, --class and --dataset are required");
  let code: string;
  try {
    code = readFileSync(a.model, "utf8");
  } catch (err) {
    usage(`cannot read --model ${a.model}: ${(err as Error).message}`);
  }
  const num = (flag: string, v: string | undefined) => {
    if (v === undefined) return 0;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) usage(`--${flag} must be a positive number, got "${v}"`);
    return n;
  };
  const whole = (flag: string, v: string | undefined) => (v === undefined ? 0 : parsePositiveInt(v) ?? usage(`--${flag} must be a positive integer, got "${v}"`));
  const target = a.target === undefined ? 0 : (parseFraction(a.target) ?? usage(`--target must be a fraction or a percentage, got "${a.target}"`));
  const choice = <V extends number>(flag: string, set: ClosedSet<V, string>, v: string | undefined) =>
    v === undefined ? undefined : (set.value(v) ?? usage(`--${flag} must be one of ${set.names.join(", ")}, got "${v}"`));
  const emaDecay = a["ema-decay"] === undefined ? 0 : Number(a["ema-decay"]);
  if (!(emaDecay >= 0 && emaDecay < 1)) usage(`--ema-decay must be a number in [0, 1), got "${a["ema-decay"]}"`);
  const seeds = whole("seeds", a.seeds) || DEFAULTS.seeds;
  const parsedDevice = parseDevice(a.device);
  if (!parsedDevice.ok) usage(parsedDevice.error);
  const device = parsedDevice.device;
  if (device !== undefined && a.runner) usage("--device applies to the runner this command starts; --runner names one already running");
  const dataDir = a["data-dir"] ? resolve(a["data-dir"]) : "";
  const targetColumn = a["target-column"] ?? "";
  const file = datasetNamed(a.dataset)?.file;
  if (file && !dataDir) usage(`--dataset ${a.dataset} needs --data-dir PATH (its files have no standard place)`);
  if (file && !targetColumn && file.missingTarget(dataDir)) usage(`--dataset ${a.dataset} needs --target-column COL (the label column)`);
  const noData = dataProblem({ dataset: a.dataset, dataDir, targetColumn });
  if (noData) usage(noData);
  const request = {
    trialId: "quick-evaluator",
    model: { code, className: a.class },
    dataset: { name: a.dataset, dataDir, subset: whole("subset", a.subset), targetColumn },
    recipe: {
      optimizer: choice("optimizer", OPTIMIZER, a.optimizer),
      schedule: choice("schedule", SCHEDULE, a.schedule),
      lr: num("lr", a.lr),
      batchSize: whole("batch-size", a["batch-size"]),
      epochs: whole("epochs", a.epochs),
      trainSeconds: num("train-seconds", a["train-seconds"]),
      emaDecay,
      amp: a.amp ?? false,
      channelsLast: a["channels-last"] ?? false,
      deterministic: a.deterministic ?? false,
    },
    seeds,
    target,
    evaluateTest: a.test ?? false,
    budget: {
      timeBudgetS: num("time-budget", a["time-budget"]),
      memoryLimitMb: whole("memory-limit", a["memory-limit"]),
      maxParams: BigInt(whole("max-params", a["max-params"])),
    },
  };
  return { request, device, dataDir, model: a.model, className: a.class, dataset: a.dataset };
}

/** A runner of its own for the evaluation's seeds, reading the data's folder; one that cannot start: exit 1. */
async function ownRunner(seeds: number, dataDir: string, device: RunnerDevice | undefined, unsafeNoSandbox: boolean | undefined, python: string, log: Logger): Promise<RunningRunner> {
  const root = dataDir && statSync(dataDir, { throwIfNoEntry: false })?.isFile() ? dirname(dataDir) : dataDir;
  try {
    return await startRunner({ slots: Math.min(seeds, availableParallelism()), python, dataRoots: root ? [root] : [], unsafeNoSandbox, device, logger: log });
  } catch (err) {
    process.stderr.write(`quick-evaluator: cannot start a runner: ${(err as Error).message}\n`);
    process.exit(EXIT.cannotRun);
  }
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ options: FLAGS });
  } catch (err) {
    usage((err as Error).message);
  }
  const a = parsed.values;
  if (a.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const { request, device, dataDir, model, className, dataset } = requestOf(a);
  const config = cliConfig();
  // Checked before a runner starts; the runner would name the file "model.py", not the user's.
  const problem = modelFileProblem(config.runnerPython, model, className);
  if (problem) {
    process.stderr.write(`FAILED [codegen_error]: ${problem}\n`);
    process.exit(EXIT.badInput);
  }
  const noCuda = device === "cuda" ? cudaProblem(config.runnerPython) : undefined;
  if (noCuda) usage(noCuda);
  const log = createLogger("quick-evaluator");
  log.level = config.logLevel;
  const own = a.runner ? undefined : await ownRunner(request.seeds, dataDir, device, a["unsafe-no-sandbox"], config.runnerPython, log);
  const client = connectRunner(a.runner ?? own!.address);
  const progress = new Progress(!a.json || process.stderr.isTTY);
  const abort = new AbortController();
  process.once("SIGINT", () => abort.abort());
  let exitCode = 0;
  try {
    const result = await evaluateToResult(client, request, (e: EvaluateEvent) => progress.onEvent(e), { signal: abort.signal });
    if (a.json) process.stdout.write(`${JSON.stringify(protoJson(EvalResultSchema, result), null, 2)}\n`);
    else process.stdout.write(render(result, dataset));
  } catch (err) {
    const e = ResearchError.from(err);
    process.stderr.write(`FAILED [${e.label}]: ${e.message}\n${e.detail ? `${e.detail.split("\n").slice(-12).join("\n")}\n` : ""}`);
    exitCode = EXIT.cannotRun;
  } finally {
    client.close();
    await own?.close();
  }
  process.exit(exitCode);
}

const GOAL_TEXT: Record<GoalStatus, string> = {
  [GoalStatus.UNSPECIFIED]: "unknown",
  [GoalStatus.ACHIEVED]: "ACHIEVED (95% CI lower bound >= target)",
  [GoalStatus.LIKELY]: "LIKELY (mean >= target, CI lower bound below it)",
  [GoalStatus.NOT_ACHIEVED]: "NOT ACHIEVED",
  [GoalStatus.NO_TARGET]: "no target given",
};

function render(r: EvalResult, dataset: string): string {
  const acc = r.aggregated.val_accuracy;
  const lines = [
    `dataset ${dataset} · ${r.numSeeds} seeds · ${int(r.params)} params · ${r.seconds.toFixed(1)} s on ${r.device?.kind ?? "?"}${r.device?.sandboxed ? " (sandboxed)" : ""}`,
    acc
      ? `val_accuracy  mean ${pct(acc.mean)}  std ${pct(acc.std)}  95% CI [${pct(acc.ci95[0]!)}, ${pct(acc.ci95[1]!)}]  min ${pct(acc.min)}  max ${pct(acc.max)}`
      : "val_accuracy  (missing)",
  ];
  for (const key of ["val_f1_macro", "val_roc_auc", "test_accuracy"]) {
    const s = r.aggregated[key];
    if (s) lines.push(`${key.padEnd(13)} mean ${pct(s.mean)}  95% CI [${pct(s.ci95[0]!)}, ${pct(s.ci95[1]!)}]`);
  }
  lines.push(`per seed      ${r.seedResults.map((s) => `${s.seed}: ${pct(s.metrics.val_accuracy ?? 0)}`).join("  ")}  (best seed ${r.bestSeed})`);
  if (r.target > 0) lines.push(`goal          ${pct(r.target)} -> ${GOAL_TEXT[r.goalStatus]}`);
  lines.push(
    `overfitting   ${r.overfitting?.severity ?? "?"} (train-val gap ${pct(r.overfitting?.gap ?? 0)}) · convergence ${r.convergence?.state ?? "?"}`,
  );
  if (r.weakClasses.length) lines.push(`weak classes  ${r.weakClasses.map((c) => r.classNames[c] ?? String(c)).join(", ")}`);
  return `${lines.join("\n")}\n`;
}

void main();
