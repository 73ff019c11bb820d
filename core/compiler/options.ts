/**
 * What the compiler takes from a dataset besides the config: the planner counts a candidate's
 * parameters and the coder builds the trial with the same options.
 */
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { learningOf, outputWidth } from "../learning/index.js";
import type { InputDtype } from "../model-config.js";

export interface CompileOptions {
  /** One sample's shape without batch; the dataset's, which wins over config.input_shape only when they agree. */
  inputShape?: readonly number[];
  numClasses?: number;
  inputDtype?: InputDtype;
  /** Python class name; derived from config.name when absent. */
  className?: string;
  /** Text datasets: ids go up to vocabSize - 1, so an embedding must be at least this large. */
  vocabSize?: number;
  /** A language model: the output is numClasses scores at every position, [length, numClasses]. */
  perPosition?: boolean;
}

/** The options of `info`'s dataset: its sample's shape and dtype, the output width its task asks for, a text's vocabulary. */
export function compileOptions(info: DatasetInfo): CompileOptions {
  return {
    inputShape: info.inputShape,
    numClasses: outputWidth(info),
    inputDtype: info.inputDtype === "int64" ? "int64" : "float32",
    vocabSize: info.vocabSize || undefined,
    perPosition: learningOf(info.task).perPosition,
  };
}
