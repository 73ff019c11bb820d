/**
 * launch --from: where a run starts, read and checked at the edge. A model in
 * Python (a file and --class), a model_config file (YAML or JSON), or RUN/TRIAL
 * of an earlier run in the workspace, whose files its run folder keeps; each
 * with an optional --recipe (a train_config). Checked twice before the run
 * spends anything: here its text (the Python's syntax and class, the configs
 * against the schemas), and once the runner has described the dataset, the
 * model built on the dataset's shape against the goal's parameter limit
 * (startProblem: a model in Python is built by the runner, in its sandbox).
 * Either failing is one line and exit status 1, bad input.
 */
import { create } from "@bufbuild/protobuf";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { compileModel } from "../core/compiler/compile.js";
import { int } from "../core/format.js";
import { authoredTrainConfig, authoredTrialModel, isCodeModel, type TrainConfigInput, type TrialModelInput } from "../core/model-config.js";
import type { RunnerClient } from "../gpu-runner/client.js";
import { StartingPointSchema, type Goal, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { summaryInput } from "../swarm/dataset-info.js";
import { compileOptions } from "../core/compiler/options.js";
import { fail } from "./args.js";
import { modelFileProblem } from "./preflight.js";
import { kwargsMessage, modelSpec, trainSpec } from "../core/config-wire.js";

const RUN_TRIAL = /^(r[\w-]+?)\/(?:\1-)?(t\d{3,})$/;

function readText(path: string, what: string): string {
  if (!existsSync(path) || !statSync(path).isFile()) fail(`${what}: no such file: ${path}`);
  return readFileSync(path, "utf8");
}

/** A schema's list of issues ("invalid model_config:\n- a: x\n- b: y") on one line. */
function oneLine(error: string): string {
  const [head, ...issues] = error.split("\n- ");
  return issues.length ? `${head} ${issues.join("; ")}` : head!;
}

function modelOf(text: string, where: string): TrialModelInput {
  const m = authoredTrialModel(text);
  return m.ok ? m.value : fail(`--from ${where}: ${oneLine(m.error)}`);
}

function trainOf(text: string, where: string): TrainConfigInput {
  const t = authoredTrainConfig(text);
  return t.ok ? t.value : fail(`${where}: ${oneLine(t.error)}`);
}

/** A starting point as it goes on the wire, with its model as validated here (startProblem builds it). */
export interface Start {
  point: StartingPoint;
  model: TrialModelInput;
  /** Its recipe as the person wrote it (--recipe, or the trial's). */
  train: TrainConfigInput;
}

/** What names the starting point: --from, and --class for a model in Python. */
export interface StartFlags {
  from?: string;
  recipe?: string;
  class?: string;
}

/** A model in Python: its source, and a code model_config naming the class (built with its defaults). */
function pythonModel(path: string, from: string, className: string | undefined, python: string): { model: TrialModelInput; code: string } {
  if (!className) fail(`--from ${from} is a model in Python: give --class NAME, the nn.Module to train`);
  const code = readText(path, "--from");
  const problem = modelFileProblem(python, path, className);
  if (problem) fail(`--from ${problem}`);
  return { model: { name: className, class_name: className, init_kwargs: {} }, code };
}

/**
 * Where a goal may read its files: every path it names, judged after symlinks and "..", must lie
 * under a root (serve's --data-root), else the goal is refused before anything is read.
 */
export type Confine = (path: string, what: string) => void;

/** The run's starting point from the flags, or none; a bad one exits 1 with a line naming it. */
export function startingPointOf(flags: StartFlags, workspace: string, python: string, confine?: Confine): Start | undefined {
  const { from, recipe } = flags;
  if (!from) {
    if (recipe) fail("--recipe is the training recipe of a starting point: give --from too");
    if (flags.class) fail("--class names the nn.Module of a model in Python: give --from FILE.py too");
    return undefined;
  }
  let model: TrialModelInput;
  let code = "";
  let train: TrainConfigInput = {};
  const trial = RUN_TRIAL.exec(from);
  if (trial && !existsSync(from)) {
    const [, run, t] = trial;
    if (flags.class) fail(`--class is for a model in Python (--from FILE.py); ${from} is a trial, which names its own class`);
    const dir = join(workspace, "runs", run!, "experiments", `${run}-${t}`);
    if (!existsSync(dir)) fail(`--from ${from}: no trial ${run}-${t} in ${join(workspace, "runs")} (a run's trials are in its folder once it has stored them)`);
    model = modelOf(readText(join(dir, "model_config.yaml"), `--from ${from}`), from);
    // A code trial trains the code its folder keeps beside its configs: its run's Python, or the
    // code an LLM's edit made, which is this run's source as it is (no edit to make, no trial of
    // that run to take it from).
    if (isCodeModel(model)) {
      const { code_edit: _made, source_trial: _from, ...asIs } = model;
      model = asIs;
      code = readText(join(dir, "model_code.py"), `--from ${from}`);
    }
    train = trainOf(readText(join(dir, "train_config.yaml"), `--from ${from}`), `--from ${from}`);
  } else {
    const path = resolve(from);
    confine?.(path, "--from");
    if (/\.py$/i.test(path)) ({ model, code } = pythonModel(path, from, flags.class, python));
    else {
      model = modelOf(readText(path, "--from"), from);
      if (isCodeModel(model)) fail(`--from ${from}: a model_config that names a class is a model in Python: give --from FILE.py --class ${model.class_name}`);
    }
  }
  if (flags.class && !code) fail(`--class is for a model in Python (--from FILE.py), and ${from} is a model_config`);
  if (recipe) confine?.(resolve(recipe), "--recipe");
  if (recipe) train = trainOf(readText(resolve(recipe), "--recipe"), `--recipe ${recipe}`);
  return {
    point: create(StartingPointSchema, { origin: from, model: modelSpec(model), train: trainSpec(train), modelCode: code }),
    model,
    train,
  };
}

/**
 * Why the starting point cannot train on the goal's dataset: its shape, or the goal's parameter
 * limit. A model in Python is built by the runner (Summarize, in its sandbox): what it finds (the
 * size, the constructor's numeric and boolean arguments) goes into the starting point.
 */
export async function startProblem(start: Start, goal: Goal, info: DatasetInfo, runner: RunnerClient): Promise<string | undefined> {
  const { origin } = start.point;
  let params: number;
  if (isCodeModel(start.model)) {
    const { model } = start;
    const summary = await runner.summarize({
      model: { code: start.point.modelCode, className: model.class_name, initKwargs: kwargsMessage(model.init_kwargs ?? {}) },
      ...summaryInput(info),
    });
    if (summary.failure) return `--from ${origin}: does not build for ${goal.dataset}: ${summary.failure.message}`;
    params = Number(summary.totalParams);
    start.point.arguments = summary.arguments;
    start.point.params = summary.totalParams;
  } else {
    const compiled = compileModel(start.model, compileOptions(info));
    if (!compiled.ok) return `--from ${origin}: does not fit ${goal.dataset}: ${compiled.error}`;
    params = compiled.params;
  }
  const max = Number(goal.maxParams);
  if (max > 0 && params > max) return `--from ${origin}: ${int(params)} parameters exceed the goal's limit of ${int(max)}`;
  return undefined;
}
