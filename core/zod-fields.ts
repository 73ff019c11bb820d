/**
 * The zod field builders every authored schema shares (model_config's layers in
 * core/model-config.ts, the recipe's rows in core/space.ts), so a count or a flag is refused
 * in the same words wherever it is written.
 */
import { z } from "zod";

const POSITIVE_INT = "expected a positive integer";
const NON_NEGATIVE_INT = "expected a non-negative integer";

export function posInt(max: number) {
  return z
    .int({ error: POSITIVE_INT })
    .min(1, { error: POSITIVE_INT })
    .max(max, { error: `expected at most ${max}` });
}

export function nonNegInt(max: number) {
  return z
    .int({ error: NON_NEGATIVE_INT })
    .min(0, { error: NON_NEGATIVE_INT })
    .max(max, { error: `expected at most ${max}` });
}

export const bool = () => z.boolean({ error: "expected true or false" });
