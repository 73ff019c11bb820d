/**
 * The registry of learning: one module per proto `Task` (learning.ts says what each holds; the
 * runner's twin is gpu-runner/python/learning/). The rest of the swarm asks here and never names
 * a task. test/core/learning.test.ts fails when the registry and the proto enum part ways.
 */
import { Task, type DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { TASK, type TaskName } from "../enums.js";
import { CLASSIFICATION } from "./classification.js";
import { LANGUAGE_MODELLING } from "./language-modelling.js";
import type { Learning } from "./learning.js";
import { REGRESSION } from "./regression.js";

export const LEARNINGS: Readonly<Record<TaskName, Learning>> = {
  classification: CLASSIFICATION,
  regression: REGRESSION,
  language_modelling: LANGUAGE_MODELLING,
};

/** The learning of a task, by its name or its proto value; unspecified (every run before regression) is classification. */
export function learningOf(task: TaskName | Task): Learning {
  const name = typeof task === "number" ? (TASK.name(task) ?? "classification") : task;
  return LEARNINGS[name];
}

/** The model's output width, by its task: one logit per class, one value for a regression, or, at each position, one per byte value. */
export function outputWidth(info: DatasetInfo): number {
  return learningOf(info.task).outputWidth(info);
}
