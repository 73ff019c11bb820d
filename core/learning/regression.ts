/** Regression: one number per example, decided on RMSE (the default), MAE or R² in the target's units. */
import type { Learning } from "./learning.js";

export const REGRESSION = {
  name: "regression",
  metrics: {
    rmse: { higherIsBetter: false, proportion: false, label: "RMSE", example: "below 55" },
    mae: { higherIsBetter: false, proportion: false, label: "MAE", example: "below 55" },
    r2: { higherIsBetter: true, proportion: false, label: "R²", example: "above 0.5" },
  },
  ranges: { rmse: "non_negative", mae: "non_negative", r2: "real", loss: "non_negative" },
  outputWidth: () => 1,
  perPosition: false,
  classes: false,
  describeTarget: () => "a numeric target",
  refusal: (m) => `${m.dataset} is a ${m.serves.join(" or ")} dataset: ${m.metric} needs a numeric target (diabetes, or a csv target column)`,
  // A regression no better than predicting the mean target (R² at or below 0) learns nothing.
  gateMiss(aggregated) {
    const r2 = aggregated.val_r2?.mean ?? 0;
    if (r2 > 0) return undefined;
    return { message: `mean validation R² ${r2.toFixed(3)} is no better than predicting the mean target (0)`, reason: "no better than the mean" };
  },
} as const satisfies Learning;
