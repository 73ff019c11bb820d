/**
 * Synthetic data (gpu-runner/python/tasks/synthetic.py): classes drawn for a shape chosen per
 * run, for tests and benchmarks that need data of a given size. Its inputs are images or rows,
 * and it starts from the templates of that kind.
 */
import { IMAGES } from "./images.js";
import { TABULAR } from "./tabular.js";
import type { TaskModule } from "./task.js";

export const SYNTHETIC = {
  name: "synthetic",
  describe: "synthetic classes of a chosen shape",
  datasets: [{ name: "synthetic", aliases: /\bsynthetic\b/gi, serves: ["classification"], generated: true }],
  templates: (info, device) => (info.inputShape.length === 3 ? IMAGES : TABULAR).templates(info, device),
} as const satisfies TaskModule;
