/**
 * launch --from: where a run starts, read and checked at the edge. A
 * model_config file (YAML or JSON) with an optional --recipe (a train_config),
 * or RUN/TRIAL of an earlier run in the workspace, whose configs its run folder
 * keeps. Checked twice before the run spends anything: here its text against
 * the schemas, and once the runner has described the dataset, the model against
 * the dataset's shape and the goal's parameter limit (startProblem). Either
 * failing is one line and exit status 2.
 */
import { create } from "@bufbuild/protobuf";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { compileModel } from "../core/compiler/compile.js";
import { authoredModelConfig, authoredTrainConfig, type ModelConfigInput, type TrainConfigInput } from "../core/model-config.js";
import { StartingPointSchema, type Goal, type StartingPoint } from "../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../proto/gen/research/v1/runner_pb.js";
import { compileOptions } from "../swarm/dataset-info.js";
import { fail } from "./args.js";

const RUN_TRIAL = /^(r[\w-]+?)\/(?:\1-)?(t\d{3,})$/;

function readText(path: string, what: string): string {
  if (!existsSync(path) || !statSync(path).isFile()) fail(`${what}: no such file: ${path}`, 2);
  return readFileSync(path, "utf8");
}

/** A schema's list of issues ("invalid model_config:\n- a: x\n- b: y") on one line. */
function oneLine(error: string): string {
  const [head, ...issues] = error.split("\n- ");
  return issues.length ? `${head} ${issues.join("; ")}` : head!;
}

function modelOf(text: string, where: string): ModelConfigInput {
  const m = authoredModelConfig(text);
  return m.ok ? m.value : fail(`--from ${where}: ${oneLine(m.error)}`, 2);
}

function trainOf(text: string, where: string): TrainConfigInput {
  const t = authoredTrainConfig(text);
  return t.ok ? t.value : fail(`${where}: ${oneLine(t.error)}`, 2);
}

/** A starting point as it goes on the wire, with its model as validated here (startProblem compiles it). */
export interface Start {
  point: StartingPoint;
  model: ModelConfigInput;
}

/** The run's starting point from --from and --recipe, or none; a bad one exits 2 with a line naming it. */
export function startingPointOf(from: string | undefined, recipe: string | undefined, workspace: string): Start | undefined {
  if (!from) {
    if (recipe) fail("--recipe is the training recipe of a starting point: give --from too");
    return undefined;
  }
  let model: ModelConfigInput;
  let train: TrainConfigInput = {};
  const trial = RUN_TRIAL.exec(from);
  if (trial && !existsSync(from)) {
    const [, run, t] = trial;
    const dir = join(workspace, "runs", run!, "experiments", `${run}-${t}`);
    if (!existsSync(dir)) fail(`--from ${from}: no trial ${run}-${t} in ${join(workspace, "runs")} (a run's trials are in its folder once it has stored them)`, 2);
    model = modelOf(readText(join(dir, "model_config.yaml"), `--from ${from}`), from);
    train = trainOf(readText(join(dir, "train_config.yaml"), `--from ${from}`), `--from ${from}`);
  } else {
    const path = resolve(from);
    if (/\.py$/i.test(path)) fail(`--from ${from}: a model's Python file is not a starting point yet; give its model_config (YAML or JSON) or RUN/TRIAL of an earlier run`, 2);
    model = modelOf(readText(path, "--from"), from);
  }
  if (recipe) train = trainOf(readText(resolve(recipe), "--recipe"), `--recipe ${recipe}`);
  return { point: create(StartingPointSchema, { origin: from, modelConfigJson: JSON.stringify(model), trainConfigJson: JSON.stringify(train) }), model };
}

/** Why the starting point cannot train on the goal's dataset: its shape, or the goal's parameter limit. */
export function startProblem(start: Start, goal: Goal, info: DatasetInfo): string | undefined {
  const { origin } = start.point;
  const compiled = compileModel(start.model, compileOptions(info));
  if (!compiled.ok) return `--from ${origin}: does not fit ${goal.dataset}: ${compiled.error}`;
  const max = Number(goal.maxParams);
  if (max > 0 && compiled.params > max) return `--from ${origin}: ${compiled.params.toLocaleString("en-US")} parameters exceed the goal's limit of ${max.toLocaleString("en-US")}`;
  return undefined;
}
