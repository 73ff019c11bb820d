/**
 * A RunnerService that answers at once, for benchmarks of everything around
 * the runner (bus, folds, lineage writes, planning): it stands in for the
 * GPU and the sandboxed workers, and trains nothing. Served with the real
 * gRPC adapter (core/grpc.ts), so the agents' calls cross the same wire.
 *
 * - describe: a small image dataset shaped like sklearn's digits ([1, 8, 8], 10 classes).
 * - summarize: a successful summary; the parameter count follows the code's length.
 * - evaluate: started, per seed one progress per epoch and a seed_finished (what a
 *   real runner streams), then a result whose per-seed
 *   val_accuracy is a fixed function of a hash of the model code and recipe
 *   (0.80-0.95 plus a little seed noise), aggregated by gpu-runner/stats.ts, with
 *   learning curves over the requested epochs.
 * - health: ready; runScript: refused.
 */
import { createHash } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { RECIPE_DEFAULTS } from "../core/space.js";
import { ResearchError } from "../core/failure.js";
import { addService } from "../core/grpc.js";
import { aggregate, convergence, goalStatus, overfitting, weakClasses } from "../gpu-runner/stats.js";
import { DEFAULTS } from "../gpu-runner/request.js";
import {
  DatasetInfoSchema,
  EvalResultSchema,
  GoalStatus,
  RecipeSchema,
  RunnerService,
  SeedResultSchema,
  type EvaluateRequest,
  type SeedResult,
} from "../proto/gen/research/v1/runner_pb.js";

const DEVICE = { kind: "cpu", name: "fake runner (no training)", torchVersion: "none", sandboxed: false };
const CLASSES = Array.from({ length: 10 }, (_, i) => String(i));
const SLOTS = 4;

/** What describe answers: sklearn's digits as the real runner describes them. */
export const DIGITS = create(DatasetInfoSchema, {
  name: "digits",
  inputShape: [1, 8, 8],
  numClasses: CLASSES.length,
  classNames: CLASSES,
  inputDtype: "float32",
  nTrain: 1_294,
  nVal: 143,
  nTest: 360,
});

/** A number in [0, 1) from a hash of the parts. */
function unit(...parts: (string | Uint8Array)[]): number {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest().readUInt32BE(0) / 2 ** 32;
}

const paramsOf = (code: string) => 1_000 + 10 * code.length;

function seedResult(req: EvaluateRequest, seed: number, key: Uint8Array): SeedResult {
  const base = 0.8 + 0.15 * unit(key);
  const val = Math.min(0.999, base + 0.02 * (unit(key, String(seed)) - 0.5));
  const epochs = req.recipe?.epochs || RECIPE_DEFAULTS.epochs;
  // Rises quickly and levels off at the final accuracy.
  const curve = Array.from({ length: epochs }, (_, e) => val * (1 - 0.3 * 0.4 ** e));
  const train = curve.map((a) => Math.min(1, a + 0.01));
  const metrics: Record<string, number> = {
    val_accuracy: val,
    val_loss: 1 - val,
    train_accuracy: train[epochs - 1]!,
    train_loss: 1 - train[epochs - 1]!,
  };
  if (req.evaluateTest) {
    metrics.test_accuracy = val - 0.005;
    metrics.test_loss = 1 - metrics.test_accuracy;
  }
  return create(SeedResultSchema, {
    seed,
    metrics,
    learningCurve: { valAccuracy: curve, trainAccuracy: train, valLoss: curve.map((a) => 1 - a), trainLoss: train.map((a) => 1 - a), lr: curve.map(() => req.recipe?.lr || 1e-3) },
    seconds: 0.01,
    secondsToFirstStep: 0.001,
    epochsCompleted: epochs,
  });
}

async function* evaluate(req: EvaluateRequest) {
  const t0 = Date.now();
  const n = req.seeds || DEFAULTS.seeds;
  const key = createHash("sha256")
    .update(req.model?.code ?? "")
    .update(toBinary(RecipeSchema, req.recipe ?? create(RecipeSchema)))
    .digest();
  yield { event: { case: "started" as const, value: { device: DEVICE, seeds: n, queuedS: 0 } } };
  const seeds: SeedResult[] = [];
  for (let i = 0; i < n; i++) {
    const s = seedResult(req, req.baseSeed + i, key);
    seeds.push(s);
    const c = s.learningCurve!;
    for (let e = 0; e < s.epochsCompleted; e++) {
      const progress = { seed: s.seed, epoch: e + 1, epochs: s.epochsCompleted, trainLoss: c.trainLoss[e]!, trainAccuracy: c.trainAccuracy[e]!, valLoss: c.valLoss[e]!, valAccuracy: c.valAccuracy[e]!, lr: c.lr[e]!, seconds: s.seconds / s.epochsCompleted };
      yield { event: { case: "progress" as const, value: progress } };
    }
    yield { event: { case: "seedFinished" as const, value: { seed: s.seed, valAccuracy: s.metrics.val_accuracy!, seconds: s.seconds } } };
  }
  const agg = aggregate(seeds);
  const status = goalStatus(agg.val_accuracy, req.target);
  const best = seeds.reduce((a, b) => (b.metrics.val_accuracy! > a.metrics.val_accuracy! ? b : a));
  const result = create(EvalResultSchema, {
    aggregated: agg,
    seedResults: seeds,
    bestSeed: best.seed,
    numSeeds: n,
    goalAchieved: status === GoalStatus.ACHIEVED,
    goalStatus: status,
    target: req.target,
    overfitting: overfitting(seeds),
    convergence: convergence(seeds),
    params: BigInt(paramsOf(req.model?.code ?? "")),
    seconds: (Date.now() - t0) / 1000,
    device: DEVICE,
    numClasses: CLASSES.length,
    classNames: CLASSES,
    weakClasses: weakClasses(seeds),
  });
  yield { event: { case: "result" as const, value: result } };
}

export interface FakeRunner {
  address: string;
  close(): Promise<void>;
}

export async function startFakeRunner(): Promise<FakeRunner> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 64 * 1024 * 1024 });
  addService(server, RunnerService, {
    describe: async (req) => ({ ...DIGITS, name: req.dataset?.name || DIGITS.name }),
    summarize: async (req) => {
      const params = BigInt(paramsOf(req.model?.code ?? ""));
      return {
        totalParams: params,
        trainableParams: params,
        flops: params * 128n,
        layers: [{ name: "model", type: req.model?.className || "Model", outputShape: [1n, BigInt(req.numClasses || 10)], params, flops: params * 128n }],
        outputShape: [1n, BigInt(req.numClasses || 10)],
        sizeMb: Number(params) * 4 / 2 ** 20,
      };
    },
    evaluate: (req) => evaluate(req),
    health: async () => ({ device: DEVICE, slots: SLOTS, freeSlots: SLOTS, queueDepth: 0, workersReady: SLOTS }),
    runScript: async () => {
      throw new ResearchError("invalid_config", "the benchmark's fake runner runs no scripts");
    },
    fetchWeights: async function* () {
      throw new ResearchError("invalid_config", "the benchmark's fake runner trains nothing and keeps no weights");
    },
    // Its evaluations answer at once: nothing runs long enough to cancel.
    cancel: async () => ({ cancelled: false }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    address: `127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      server.forceShutdown();
    },
  };
}
