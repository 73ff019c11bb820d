/**
 * The task registry: every kind of data the swarm trains on, one module each (its Python twin,
 * with the loaders, in gpu-runner/python/tasks/). The rest of the swarm asks here and never
 * names a dataset. docs/ARCHITECTURE.md ("Extending") says what a module holds;
 * test/core/tasks.test.ts fails when one omits something the registry requires or the two
 * sides disagree.
 */
import type { SearchDevice } from "../defaults.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { IMAGES } from "./images.js";
import { SIGNAL } from "./signal.js";
import { SYNTHETIC } from "./synthetic.js";
import { TABULAR } from "./tabular.js";
import type { TaskDataset, TaskModule, Template } from "./task.js";
import { TEXT } from "./text.js";

/** In the order the goal parser tries their datasets' words. */
export const TASKS = [IMAGES, TABULAR, TEXT, SYNTHETIC, SIGNAL] as const satisfies readonly TaskModule[];

type Entry = (typeof TASKS)[number]["datasets"][number];
/** Dataset names as the runner's DatasetSpec spells them. */
export type DatasetName = Entry["name"];

/** Every dataset of every module, in the registry's order, with its module. */
export const DATASET_TABLE: readonly (TaskDataset & { name: DatasetName; task: TaskModule })[] = TASKS.flatMap((task) =>
  task.datasets.map((d: TaskDataset) => ({ ...d, name: d.name as DatasetName, task })),
);

/** The registry's entry for a dataset name, undefined for a name it does not know. */
export function datasetNamed(name: string): (typeof DATASET_TABLE)[number] | undefined {
  return DATASET_TABLE.find((d) => d.name === name);
}

/** Whether mirrored images of the dataset keep their labels: the planner's crop edit and starting recipes flip them then. */
export function mirrors(info: DatasetInfo): boolean {
  return datasetNamed(info.name)?.mirrors === true;
}

/** The starting templates for a dataset, in the order the planner tries them (its module's). */
export function templatesFor(info: DatasetInfo, device: SearchDevice = "cpu"): Template[] {
  const dataset = datasetNamed(info.name);
  if (!dataset) throw new Error(`no task module has a dataset named ${JSON.stringify(info.name)}`);
  return dataset.task.templates(info, device);
}
