/** How to feed the best model and read its outputs: the run folder's src/models/inference.json. */
import type { TrialState } from "../swarm/trial-state.js";

/** Beside the best model's code and weights (lineage-store/artifacts.ts writes it, the report's snippet reads it). */
export const INFERENCE_FILE = "src/models/inference.json";

/**
 * What predicting with the best model outside the run needs besides its code and weights, as its
 * evaluation reported it (EvalResult): one example's shape, the trainer's standardisation of an
 * input, the classes in the order of the model's outputs (or a regression's target scaling), and
 * whether its scores averaged each image with its mirror. Without it, images fed as
 * torchvision's ToTensor gives them (0-1, unstandardised) get wrong answers and no error.
 */
export function inferenceSpec(t: TrialState) {
  const r = t.evaluated?.result;
  if (!r || !r.inputShape.length) return undefined;
  return {
    class_name: t.assembled?.className || t.assembled?.request?.model?.className || "",
    input: {
      shape: r.inputShape.map(Number),
      units: "the values of the dataset's files as float32 (an image's raw pixels, 0-255; a table's columns as read)",
      standardise: r.inputMean.length
        ? { rule: "(x - mean) / std, per entry of an example's first axis (an image's channel, a table's feature)", mean: r.inputMean, std: r.inputStd }
        : null,
    },
    output: r.classNames.length
      ? { kind: "scores over classes (logits); the class is the index of the largest", classes: r.classNames }
      : { kind: "the standardised target", rule: "prediction = output * std + mean", mean: r.targetMean, std: r.targetStd },
    test_time_flip_averaging: !!t.train?.tta_hflip,
  };
}

export type InferenceSpec = NonNullable<ReturnType<typeof inferenceSpec>>;
