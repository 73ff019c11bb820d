/**
 * Does continuing a finished run's best training help (issue 37)? A run's best trial was a long
 * training whose schedule annealed to its end; this starts each of its seeds again from the
 * weights the runner kept (EvaluateRequest.init_weights) for S1 seconds with the recipe a warm
 * run's continuation gets (agents/planner/promotion.ts continuedTrain: a constant fraction of the
 * rate, the epochs' weights averaged), then, for each further S2, ..., from the weights the stage
 * before kept, as a warm run's last long training continues from its continuation; and compares
 * each seed's validation accuracy with what it had. On validation data only: it decides how a
 * later run should start from an earlier one's weights, and the test split stays unseen.
 *
 *   npx tsx bench/continue-bench.ts --workspace WS [--run R] [--trial T] [--seconds S1[,S2...]] [--restart] [--out FILE]
 *
 * --restart trains the past recipe as it was instead (its schedule run again over the new time,
 * no average): the warm restart the continuation was before.
 *
 * WS is a finished run's workspace; its runner-state is copied, never changed. R defaults to the
 * workspace's first run, T to the run's best trial. Each stage trains the trial's seeds as its run did (at once when it did) on a
 * runner with 2 slots.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, hostname, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { execFileSync } from "node:child_process";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { storedRuns } from "../cli/workspace.js";
import { continuedTrain } from "../agents/planner/promotion.js";
import { LAST_EPOCHS } from "../core/defaults.js";
import { recipeOf, trainConfigOfRecipe } from "../core/recipe.js";
import { createLogger } from "../core/logger.js";
import { connectRunner, evaluateToResult } from "../gpu-runner/client.js";
import { startRunner } from "../gpu-runner/server.js";
import { RecipeSchema, WeightsRefSchema, type EvaluateRequestSchema } from "../proto/gen/research/v1/runner_pb.js";

const { values } = parseArgs({
  options: { workspace: { type: "string" }, run: { type: "string" }, trial: { type: "string" }, seconds: { type: "string", default: "300" }, restart: { type: "boolean", default: false }, out: { type: "string" } },
});
if (!values.workspace) throw new Error("--workspace is required");
const WS = resolve(values.workspace);
const STAGES = values.seconds!.split(",").map(Number);

const stored = [...(await storedRuns(WS))].find(([id]) => values.run === undefined || id === values.run);
if (!stored) throw new Error(`no run ${values.run ?? ""} in ${WS}`);
const [runId, events] = stored;
const finished = events.find((e) => e.body.case === "runFinished");
const trialId = values.trial ?? (finished?.body.case === "runFinished" ? finished.body.value.bestTrialId : "");
const assembled = events.find((e) => e.trialId === trialId && e.body.case === "trialAssembled");
const evaluated = events.find((e) => e.trialId === trialId && e.body.case === "trialEvaluated");
if (assembled?.body.case !== "trialAssembled" || evaluated?.body.case !== "trialEvaluated" || !assembled.body.value.request) throw new Error(`no evaluated trial ${trialId} in run ${runId}`);
const past = assembled.body.value.request;
const pastTrain = trainConfigOfRecipe(past.recipe);
if (!pastTrain.ok) throw new Error(`trial ${trialId}'s recipe: ${pastTrain.error}`);
const before = evaluated.body.value.result!.seedResults.map((s) => ({ seed: s.seed, val: s.metrics.val_accuracy!, epochs: s.epochsCompleted }));

const log = createLogger("continue-bench");
log.level = "warn";
const state = mkdtempSync(join(tmpdir(), "continue-bench-"));
cpSync(join(WS, "runner-state"), state, { recursive: true });
const runner = await startRunner({ slots: 2, stateDir: state, logger: log });
const client = connectRunner(runner.address);
const stages = [];
try {
  let from = { runId, trialId };
  for (const [i, seconds] of STAGES.entries()) {
    const req: MessageInitShape<typeof EvaluateRequestSchema> = {
      ...past,
      runId: "continue-bench",
      trialId: `stage-${i + 1}`,
      idempotencyKey: "",
      // The next stage starts from these.
      keepWeights: true,
      evaluateTest: false,
      // Its latency was measured in its run: not again, and no limit to check before training.
      measureInference: false,
      recipe: values.restart ? { ...past.recipe!, trainSeconds: seconds } : create(RecipeSchema, recipeOf(continuedTrain(pastTrain.value, seconds, LAST_EPOCHS))),
      budget: { ...past.budget!, deadlineS: 0, maxLatencyMs: 0, timeBudgetS: seconds + 300 },
      initWeights: create(WeightsRefSchema, from),
    };
    const t0 = performance.now();
    const result = await evaluateToResult(client, req);
    const after = result.seedResults.map((s) => ({ seed: s.seed, val: s.metrics.val_accuracy!, epochs: s.epochsCompleted }));
    const gains = after.map((a, i) => a.val - before[i]!.val);
    const stage = { seconds, from: from.trialId, wall_s: Math.round((performance.now() - t0) / 100) / 10, seeds: after, gain_pp: gains.map((g) => Math.round(g * 1e4) / 100), mean_gain_pp: Math.round((gains.reduce((a, b) => a + b, 0) / gains.length) * 1e4) / 100 };
    console.log(JSON.stringify(stage));
    stages.push(stage);
    from = { runId: "continue-bench", trialId: `stage-${i + 1}` };
  }
} finally {
  client.close();
  await runner.close();
  rmSync(state, { recursive: true, force: true });
}

const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const out = resolve(values.out ?? `bench/results/continue-${commit}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ commit, machine: { host: hostname(), cpu: cpus()[0]?.model, cores: cpus().length }, load_at_start: loadavg()[0], command: process.argv.slice(1).join(" "), workspace: WS, recipe: values.restart ? "restart" : "continuation", run: runId, trial: trialId, model: past.model?.className, seeds_at_once: past.seedsAtOnce, before, stages }, null, 2)}\n`,
);
console.log(`written ${out}`);
