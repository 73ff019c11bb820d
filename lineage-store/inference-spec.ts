/** How to feed the best model and read its outputs: the run folder's src/models/inference.json. */
import { learningOf } from "../core/learning/index.js";
import { objective } from "../core/objective.js";
import type { RunState } from "../swarm/run-state.js";
import type { TrialState } from "../swarm/trial-state.js";

/** Beside the best model's code and weights (lineage-store/artifacts.ts writes it, the report's snippet reads it). */
export const INFERENCE_FILE = "src/models/inference.json";

/**
 * What predicting with the best model outside the run needs besides its code and weights, as its
 * evaluation reported it (EvalResult): one example's shape, the trainer's standardisation of an
 * input, the classes in the order of the model's outputs (or a regression's target scaling), and
 * whether its scores averaged each image with its mirror. Without it, images fed as
 * torchvision's ToTensor gives them (0-1, unstandardised) get wrong answers and no error. A
 * language model (the run's task scores every position) reads bytes and scores the next one.
 */
export function inferenceSpec(state: Pick<RunState, "goal">, t: TrialState) {
  const r = t.evaluated?.result;
  if (!r || !r.inputShape.length) return undefined;
  const perPosition = learningOf(objective(state.goal?.objective).task).perPosition;
  return {
    class_name: t.assembled?.className || t.assembled?.request?.model?.className || "",
    input: {
      // A language model as the run scored it: windows of its context that start afresh.
      shape: perPosition && t.train?.context ? [t.train.context] : r.inputShape.map(Number),
      units: perPosition
        ? "bytes of text as int64 ids, 0-255, a window of `shape` at once (the run scored each test row in such windows, each read afresh)"
        : "the values of the dataset's files as float32 (an image's raw pixels, 0-255; a table's columns as read)",
      standardise: r.inputMean.length
        ? { rule: "(x - mean) / std, per entry of an example's first axis (an image's channel, a table's feature)", mean: r.inputMean, std: r.inputStd }
        : null,
    },
    output: perPosition
      ? { kind: "at every position, scores over the byte after it (logits, one per byte value 0-255)", per_position: true }
      : r.classNames.length
      ? { kind: "scores over classes (logits); the class is the index of the largest", classes: r.classNames }
      : { kind: "the standardised target", rule: "prediction = output * std + mean", mean: r.targetMean, std: r.targetStd },
    test_time_flip_averaging: !!t.train?.tta_hflip,
  };
}

export type InferenceSpec = NonNullable<ReturnType<typeof inferenceSpec>>;
