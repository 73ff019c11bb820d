/**
 * What a task added through the registry declares (core/tasks/index.ts lists them; the
 * runner's twin is gpu-runner/python/tasks/). A task here is a kind of data read from a
 * person's files, named by the goal's prefix ("signal:PATH"), with its own checks before
 * anything starts and its own starting models; its loader is the Python twin's. The swarm
 * asks the registry wherever it would otherwise name a dataset: the goal's words, the
 * runner's accepted names, the pre-flight check and the planner's templates.
 */
import type { SearchDevice } from "../defaults.js";
import type { TaskName } from "../enums.js";
import type { Modality } from "./built-in.js";
import type { ModelConfigInput, TrainConfigInput } from "../model-config.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";

/** A starting model family of the planner: its model_config for a dataset, and the recipe it trains best with. */
export interface Template {
  name: string;
  blocks: string[];
  /** `width` scales the channels of image templates (1 on a CPU). */
  build(info: DatasetInfo, width?: number): ModelConfigInput;
  /** The recipe the family trains best with, where it differs from the planner's start (lr at batch 128, or at its own batch_size). */
  recipe?: Partial<TrainConfigInput>;
}

export interface TaskModule {
  /** The goal's prefix ("signal:/data/x.csv") and the runner's dataset name. */
  dataset: string;
  /** What it is, for people. */
  describe: string;
  /** The research corpus's modality its briefs draw on; none: the brief keys on the goal's words alone. */
  modality?: Modality;
  /** The tasks (core/learning/) a goal may ask of it, the first when it names no metric. */
  serves: readonly [TaskName, ...TaskName[]];
  /** A goal that names it, for the goal parser's messages. */
  example: string;
  /** Whether a goal's path needs target=COLUMN (a CSV does; a folder of arrays does not). */
  needsTarget(path: string): boolean;
  /** Why the path cannot be read as this data, as far as its files tell before anything starts; undefined when it can. */
  dataProblem(path: string, targetColumn: string): string | undefined;
  /** Its starting templates, in the order the planner tries them. */
  templates(info: DatasetInfo, device: SearchDevice): Template[];
}
