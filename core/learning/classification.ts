/** Classification: a class per example, decided on accuracy. */
import { orList } from "../format.js";
import type { Learning } from "./learning.js";

/** A classifier within this many points of chance learns next to nothing and is not worth building on. */
const GATE_ABOVE_CHANCE = 0.1;

export const CLASSIFICATION = {
  name: "classification",
  metrics: { accuracy: { higherIsBetter: true, proportion: true, label: "accuracy", example: "above 90%" } },
  ranges: {
    accuracy: "unit",
    f1_macro: "unit",
    f1_weighted: "unit",
    precision_macro: "unit",
    recall_macro: "unit",
    roc_auc: "unit",
    pr_auc: "unit",
    loss: "non_negative",
  },
  outputWidth: (info) => info.numClasses,
  perPosition: false,
  classes: true,
  describeTarget: (info) => `${info.numClasses} classes`,
  refusal: (m) => `${m.dataset} is a ${m.serves.join(" or ")} dataset: its goal decides on ${orList(m.decidesOn)}, not ${m.metric}`,
  gateMiss(aggregated, numClasses) {
    const mean = aggregated.val_accuracy?.mean ?? 0;
    const gate = 1 / (numClasses || 10) + GATE_ABOVE_CHANCE;
    if (mean >= gate) return undefined;
    return { message: `mean validation accuracy ${mean.toFixed(3)} is below the gate ${gate.toFixed(3)}`, reason: "below the accuracy gate" };
  },
} as const satisfies Learning;
