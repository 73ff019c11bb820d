/**
 * What a long training's recipe gains from a habit short probes cannot show: long rungs and last
 * trainings take the habits of agents/planner/scheduler.ts atRung, and each was decided here, on
 * the validation split (never the test split): one model and recipe trained for `--epochs` on the
 * full Fashion-MNIST training split with random crops, and with each arm's additions, `--seeds`
 * seeds each, through the runner as a run's trials are.
 *
 *   npx tsx bench/long-recipe.ts [--template bn-cnn] [--epochs 20] [--seeds 2] [--arms crops,cutout] [--out FILE]
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { compileModel } from "../core/compiler/compile.js";
import { cliConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { parseTrainConfig, type TrainConfigInput } from "../core/model-config.js";
import { recipeOf } from "../core/recipe.js";
import { connectRunner, evaluateToResult } from "../gpu-runner/client.js";
import { startRunner } from "../gpu-runner/server.js";
import { templatesFor } from "../core/tasks/index.js";
import { cutoutFor } from "../core/space.js";
import { machineFingerprint } from "./machine.js";
import { DatasetInfoSchema } from "../proto/gen/research/v1/runner_pb.js";

const { values: a } = parseArgs({
  options: { template: { type: "string", default: "bn-cnn" }, epochs: { type: "string", default: "20" }, seeds: { type: "string", default: "2" }, arms: { type: "string", default: "crops,cutout" }, out: { type: "string" } },
});
const FASHION = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000 });
const template = templatesFor(FASHION, "cpu").find((t) => t.name === a.template);
if (!template) throw new Error(`no template ${a.template}`);
const compiled = compileModel(template.build(FASHION, 1), { inputShape: [1, 28, 28], numClasses: 10 });
if (!compiled.ok) throw new Error(compiled.error);
const epochs = Number(a.epochs);
const seeds = Number(a.seeds);
// The search's long-training recipe for this template (scheduler.ts atRung): Adam 2e-3 at batch 128, cosine, crops, channels-last, mixed precision (bf16 where the CPU has it).
const base = { optimizer: "adam", lr: 2e-3, batch_size: 128, epochs, schedule: "cosine", channels_last: true, amp: true, ...template.recipe };
/** The arms: what each adds to the base recipe. Fashion-MNIST's labels survive a mirror, so flips apply. */
const ARMS: Record<string, Partial<TrainConfigInput>> = {
  crops: { augment: { crop_padding: 2 } },
  cutout: { augment: { crop_padding: 2, cutout: cutoutFor(28) } },
  flips: { augment: { crop_padding: 2, hflip: true } },
  "flips+tta": { augment: { crop_padding: 2, hflip: true }, tta_hflip: true },
};
const arms = a.arms.split(",").map((name) => {
  if (!ARMS[name]) throw new Error(`no arm ${name}: one of ${Object.keys(ARMS).join(", ")}`);
  return [name, ARMS[name]] as const;
});

const config = cliConfig();
const log = createLogger("long-recipe-bench");
log.level = "warn";
const runner = await startRunner({ slots: Math.min(2, cpus().length), python: config.runnerPython, logger: log });
const client = connectRunner(runner.address);
const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const results: Record<string, { val: number[]; mean: number; seconds: number }> = {};
const loadBefore = loadavg();
try {
  for (const [arm, extra] of arms) {
    const train = parseTrainConfig({ ...base, ...extra });
    if (!train.ok) throw new Error(train.error);
    const r = await evaluateToResult(client, {
      trialId: `long-recipe-${arm}`,
      model: { code: compiled.code, className: compiled.className },
      dataset: { name: "fashion-mnist" },
      recipe: recipeOf(train.value),
      seeds,
      budget: { timeBudgetS: 3600 },
    });
    const val = r.seedResults.map((s) => s.metrics.val_accuracy ?? 0);
    results[arm] = { val, mean: val.reduce((x, y) => x + y, 0) / val.length, seconds: r.seconds };
    console.log(`${arm}: validation ${val.map((v) => (100 * v).toFixed(2)).join(", ")} (mean ${(100 * results[arm].mean).toFixed(2)}%), ${r.seconds.toFixed(0)} s`);
  }
} finally {
  await runner.close();
}
const out = a.out ?? `bench/results/long-recipe-${a.template}-${epochs}ep-${commit}.json`;
writeFileSync(out, `${JSON.stringify({ commit, template: a.template, params: compiled.params, epochs, seeds, recipe: base, arms: results, split: "validation (6,000 of the training split's 60,000; the test split unused)", machine: machineFingerprint(config.runnerPython), load: { before: loadBefore, after: loadavg() } }, null, 2)}\n`);
console.log(`wrote ${out}`);
