/**
 * What a task module declares (core/tasks/index.ts lists them; the runner's twin is
 * gpu-runner/python/tasks/, one module each with its loaders). A task module is a kind of
 * data: the datasets of that kind the runner loads, the words a goal calls each by, the tasks
 * (core/learning/) a goal may ask of it, the checks of a person's files before anything
 * starts, and the planner's starting models. The rest of the swarm asks the registry wherever
 * it would otherwise name a dataset: the goal's words, the runner's accepted names, the
 * pre-flight check, the warm start and the planner's templates.
 */
import type { SearchDevice } from "../defaults.js";
import type { TaskName } from "../enums.js";
import type { ModelConfigInput, TrainConfigInput } from "../model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";

/** What the research corpus's briefs key on. */
export type Modality = "vision" | "tabular" | "text";

/** A starting model family of the planner: its model_config for a dataset, and the recipe it trains best with. */
export interface Template {
  name: string;
  blocks: string[];
  /** `width` scales the channels (SEARCH_DEFAULTS' templateWidth: 1 on a CPU). */
  build(info: DatasetInfo, width?: number): ModelConfigInput;
  /** The recipe the family trains best with, where it differs from the planner's start (lr at batch 128, or at its own batch_size). */
  recipe?: Partial<TrainConfigInput>;
}

/** A dataset a goal names by a path to a person's files ("csv:/data/x.csv target=y"): what the goal parser and the pre-flight check ask. */
export interface FileDataset {
  /** How the goal parser's list of datasets shows it: "csv:<path> target=<column>". */
  usage: string;
  /** A goal's words for it, keeping the path and column a person gave where it has them. */
  example(task: TaskName, given?: { dataDir?: string; targetColumn?: string }): string;
  /** The goal parser's line for a goal that names no target=COLUMN, where the path needs one (a CSV does; a folder of arrays does not). */
  missingTarget(path: string): string | undefined;
  /** Why the path cannot be read as this data, as far as its files tell before anything starts; undefined when it can. */
  dataProblem(path: string, targetColumn: string): string | undefined;
}

export interface TaskDataset {
  /** The runner's name for it (DatasetSpec.name), and the prefix of a goal that names it by a path. */
  name: string;
  /** Other words a goal names it by ("FashionMNIST", "cifar-10"); a goal names every dataset by its name too. */
  aliases?: RegExp;
  /** The tasks a goal may ask of it; the first when a goal names no metric. */
  serves: readonly [TaskName, ...TaskName[]];
  /** Named with a path to a person's files, not the runner's own copy. */
  file?: FileDataset;
  /** Drawn by the runner for the shape, classes and difficulty its request names (DatasetSpec.shape, num_classes, difficulty), which it therefore needs. */
  generated?: boolean;
  /** Images whose labels survive a horizontal mirror (clothes, objects; not digits): the planner's crop edit flips them too. */
  mirrors?: boolean;
}

export interface TaskModule {
  /** The module's name: its file here and in gpu-runner/python/tasks/. */
  name: string;
  /** What it is, for people. */
  describe: string;
  /** The research corpus's modality its briefs draw on; none: the brief keys on the goal's words alone. */
  modality?: Modality;
  /** Its datasets, in the order the goal parser tries their words (longer names first: "fashion-mnist" before "mnist"). */
  datasets: readonly TaskDataset[];
  /** Its starting templates for a dataset of it, in the order the planner tries them. */
  templates(info: DatasetInfo, device: SearchDevice): Template[];
}
