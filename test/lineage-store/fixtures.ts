import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { SURFACE, type SurfaceName } from "../../core/enums.js";
import { failure, type FailureName } from "../../core/failure.js";
import { trialId } from "../../core/ids.js";
import { authoredTrainConfig, authoredTrialModel, type Layer, type ModelConfigInput, type TrainConfigInput, type TrialModelInput } from "../../core/model-config.js";
import {
  Decision,
  EventSchema,
  RunStatus,
  Verdict,
  type Event,
} from "../../proto/gen/research/v1/events_pb.js";
import { GoalStatus } from "../../proto/gen/research/v1/runner_pb.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";

/** One trial of a synthetic but realistic run: what the planner proposed and how it ended. */
export interface TrialSpec {
  hypothesis: string;
  surface: SurfaceName;
  /** The store keeps whatever was proposed; the embedder bench's configs are loose words for retrieval, not valid configs. */
  /** Anything else (bench/embedder-bench.ts's shorthand) is stored as runs before typed configs stored theirs: JSON text. */
  model: TrialModelInput | Record<string, unknown>;
  train?: TrainConfigInput | Record<string, unknown>;
  /** Mean validation accuracy; absent when the trial failed before a result. */
  score?: number;
  fails?: { label: FailureName; at: "assembled" | "evaluated" };
  parent?: number;
}

interface CnnOptions {
  batchnorm?: boolean;
  squeeze_excitation?: boolean;
  dropout?: number;
  separable?: boolean;
  head?: "linear" | "gap";
}

/** A valid model_config: a conv stack (one conv, or a separable pair, per entry of `channels`) and a head. */
export const cnn = (channels: number[], o: CnnOptions = {}): ModelConfigInput => ({
  name: `cnn-${channels.join("-")}`,
  layers: [
    ...channels.flatMap((c): Layer[] => [
      ...(o.separable ? [{ type: "depthwise_conv2d" as const }, { type: "pointwise_conv2d" as const, out_channels: c }] : [{ type: "conv2d" as const, out_channels: c }]),
      ...(o.batchnorm ? [{ type: "batchnorm" as const }] : []),
      { type: "activation" as const },
      ...(o.squeeze_excitation ? [{ type: "se" as const }] : []),
      { type: "maxpool" as const },
    ] as Layer[]),
    ...(o.head === "gap" ? [{ type: "global_avgpool" as const }] : [{ type: "flatten" as const }]),
    ...(o.dropout ? [{ type: "dropout" as const, p: o.dropout }] : []),
  ] as Layer[],
});

export const TRIALS: TrialSpec[] = [
  { hypothesis: "baseline small convolutional network with two conv layers", surface: "architecture", model: cnn([16, 32]), score: 0.872 },
  { hypothesis: "wider conv stack with batchnorm", surface: "architecture", model: cnn([32, 64, 64], { batchnorm: true }), score: 0.903, parent: 0 },
  { hypothesis: "add squeeze-excitation blocks after each conv stage", surface: "architecture", model: cnn([32, 64, 64], { batchnorm: true, squeeze_excitation: true }), score: 0.911, parent: 1 },
  { hypothesis: "cosine learning rate schedule with linear warmup", surface: "optimisation", model: cnn([32, 64, 64], { batchnorm: true }), train: { optimizer: "sgd", schedule: "cosine", warmup_epochs: 1 }, score: 0.914, parent: 1 },
  { hypothesis: "label smoothing to reduce overconfident predictions", surface: "regularisation", model: cnn([32, 64, 64], { batchnorm: true }), train: { label_smoothing: 0.1 }, score: 0.906, parent: 1 },
  { hypothesis: "dropout before the classifier head", surface: "regularisation", model: cnn([32, 64, 64], { batchnorm: true, dropout: 0.3 }), score: 0.899, parent: 1 },
  { hypothesis: "random crop and horizontal flip augmentation", surface: "data", model: cnn([32, 64, 64], { batchnorm: true }), train: { augment: { hflip: true, crop_padding: 2 } }, score: 0.909, parent: 1 },
  { hypothesis: "very deep residual network with sixteen blocks at full resolution", surface: "architecture", model: { name: "resnet-16x256", layers: Array.from({ length: 16 }, () => ({ type: "residual" as const, layers: [{ type: "conv2d" as const, out_channels: 256 }, { type: "batchnorm" as const }] })) }, fails: { label: "oom", at: "evaluated" }, parent: 1 },
  { hypothesis: "depthwise separable convolutions to cut parameters", surface: "architecture", model: cnn([32, 64], { separable: true }), fails: { label: "shape_error", at: "assembled" }, parent: 1 },
  { hypothesis: "wider conv stack with batchnorm and more channels", surface: "architecture", model: cnn([48, 96, 96], { batchnorm: true }), score: 0.917, parent: 1 },
  { hypothesis: "adamw optimizer with decoupled weight decay", surface: "optimisation", model: cnn([32, 64, 64], { batchnorm: true }), train: { optimizer: "adamw", weight_decay: 0.05 }, score: 0.908, parent: 1 },
  { hypothesis: "global average pooling head instead of flatten", surface: "architecture", model: cnn([32, 64, 64], { batchnorm: true, head: "gap" }), fails: { label: "shape_error", at: "assembled" }, parent: 1 },
];

type EventInit = MessageInitShape<typeof EventSchema>;

function configs(t: TrialSpec) {
  const train = t.train ?? { optimizer: "adam", lr: 0.001 };
  const model = authoredTrialModel(t.model);
  const checked = authoredTrainConfig(train);
  if (model.ok && checked.ok) return { model: modelSpec(model.value), train: trainSpec(checked.value) };
  return { modelConfigJson: JSON.stringify(t.model), trainConfigJson: JSON.stringify(train) };
}

/**
 * Every event of one run in emission order: run_started, a brief, then per trial
 * proposed -> assembled -> progress -> evaluated -> judged, and run_finished.
 */
export function runEvents(runId: string, trials: TrialSpec[] = TRIALS, t0 = 1_700_000_000_000): Event[] {
  let clock = t0;
  let n = 0;
  const out: Event[] = [];
  const ev = (trialId: string, body: EventInit["body"], producer: string): void => {
    out.push(
      create(EventSchema, {
        runId, trialId, eventId: `${runId}-e${n++}`, emittedAtMs: BigInt((clock += 7)), producer, body,
      }),
    );
  };
  const tid = (i: number) => trialId(runId, i);

  ev("", {
    case: "runStarted",
    value: {
      goal: { rawText: "Fashion-MNIST, at least 92% validation accuracy, under 200k parameters, 20 minutes", dataset: "fashion-mnist", target: 0.92, maxParams: 200_000n, timeBudgetS: 1200 },
      settings: { maxTrials: trials.length, seeds: 3, parallel: 2, planner: "builtin", patience: 5, subset: 10_000, epochs: 3 },
    },
  }, "cli");
  ev("", {
    case: "briefReady",
    value: {
      briefId: `${runId}-brief`, query: "small cnn fashion-mnist", author: "builtin",
      // Stored before briefs were typed, and not valid as a brief: the lineage keeps it as it came.
      briefJson: JSON.stringify({
        summary_title: "Compact CNNs for Fashion-MNIST",
        insights: ["batch normalisation speeds convergence", "squeeze-and-excitation adds channel attention cheaply"],
        architectural_suggestions: [{ name: "se_block", description: "squeeze excitation after conv stages" }],
        sources: ["arXiv:1709.01507"],
      }),
    },
  }, "researcher");

  let best = -1;
  trials.forEach((t, i) => {
    const id = tid(i);
    const parentIds = t.parent === undefined ? [] : [tid(t.parent)];
    ev(id, {
      case: "trialProposed",
      value: {
        hypothesis: t.hypothesis, rationale: `because ${t.hypothesis} should help`, parentIds, surface: SURFACE.value(t.surface),
        ...configs(t),
        index: i, adoptedConcepts: t.hypothesis.includes("squeeze") ? ["se_block"] : [], proposer: `planner-${t.surface}`,
      },
    }, "planner");
    const params = 40_000n + BigInt(i) * 9_000n;
    const assemblyFails = t.fails?.at === "assembled";
    ev(id, {
      case: "trialAssembled",
      value: {
        code: `class Trial${i}(nn.Module):\n    pass  # ${t.hypothesis}\n`, className: `Trial${i}`,
        diff: parentIds.length ? `--- ${parentIds[0]}\n+++ ${id}\n+# ${t.hypothesis}\n` : "",
        summary: assemblyFails ? undefined : { totalParams: params, trainableParams: params, flops: params * 2_000n },
        failure: assemblyFails ? failure(t.fails!.label, "mat1 and mat2 shapes cannot be multiplied (128x3136 and 1568x10)") : undefined,
      },
    }, "coder");
    if (!assemblyFails) {
      for (let epoch = 1; epoch <= 2; epoch++) {
        ev(id, { case: "trialProgress", value: { progress: { seed: 0, epoch, epochs: 2, valAccuracy: (t.score ?? 0.5) - 0.02 / epoch } } }, "analyst");
      }
      if (t.fails) {
        ev(id, { case: "trialEvaluated", value: { failure: failure(t.fails.label, t.fails.label === "oom" ? "CUDA out of memory" : `${t.fails.label} during evaluation`), evalSeconds: 3.5 } }, "analyst");
      } else {
        const mean = t.score!;
        ev(id, {
          case: "trialEvaluated",
          value: {
            result: {
              aggregated: { val_accuracy: { mean, std: 0.004, ci95: [mean - 0.01, mean + 0.01], min: mean - 0.005, max: mean + 0.005, n: 3 } },
              numSeeds: 3, params, goalStatus: mean - 0.01 >= 0.92 ? GoalStatus.ACHIEVED : GoalStatus.NOT_ACHIEVED, target: 0.92,
            },
            analysis: { overfitting: "mild", convergence: "converged", weakClasses: [6], notes: ["shirt vs t-shirt confusions"] },
            evalSeconds: 41.5,
          },
        }, "analyst");
      }
    }
    if (t.score !== undefined && (best < 0 || t.score > trials[best]!.score!)) best = i;
    ev(id, {
      case: "trialJudged",
      value: {
        verdict: t.fails ? Verdict.REJECT : Verdict.ACCEPT, decision: Decision.ITERATE, reason: t.fails ? `failed: ${t.fails.label}` : "within budget",
        bestTrialId: best >= 0 ? tid(best) : "", score: t.score ?? 0, ciLow: t.score ? t.score - 0.01 : 0, ciHigh: t.score ? t.score + 0.01 : 0,
        failure: t.fails ? failure(t.fails.label, "see evaluation") : undefined, surface: SURFACE.value(t.surface), trialsDone: i + 1,
      },
    }, "judge");
  });
  ev("", {
    case: "runFinished",
    value: { status: RunStatus.BUDGET_EXHAUSTED, bestTrialId: best >= 0 ? tid(best) : "", reportPath: `/runs/${runId}/report.md`, trials: trials.length, seconds: 600, reason: "max trials reached" },
  }, "judge");
  return out;
}

const WORDS = {
  what: ["wider", "deeper", "narrower", "residual", "separable", "dilated", "grouped", "bottleneck", "attention", "inverted"],
  block: ["conv stack", "squeeze-excitation block", "mlp head", "pooling stage", "stem", "classifier"],
  tweak: ["with batchnorm", "with dropout", "with cosine schedule", "with label smoothing", "with mixup", "with warmup", "with weight decay"],
};

/** n varied trials for scale measurements (hypotheses from a small grammar, some failing). */
export function manyTrials(n: number): TrialSpec[] {
  const labels: FailureName[] = ["oom", "shape_error", "nan_loss", "budget_overrun"];
  return Array.from({ length: n }, (_, i) => {
    const what = WORDS.what[i % WORDS.what.length]!;
    const block = WORDS.block[Math.floor(i / 10) % WORDS.block.length]!;
    const tweak = WORDS.tweak[Math.floor(i / 60) % WORDS.tweak.length]!;
    const fails = i % 9 === 4 ? { label: labels[i % labels.length]!, at: "evaluated" as const } : undefined;
    return {
      hypothesis: `${what} ${block} ${tweak} (variant ${i})`,
      surface: SURFACE.names[i % SURFACE.names.length]!,
      model: cnn([16 + (i % 5) * 8, 32 + (i % 7) * 8], { batchnorm: i % 2 === 0 }),
      score: fails ? undefined : 0.8 + ((i * 37) % 100) / 1000,
      fails,
      parent: i > 0 ? Math.floor(i / 2) : undefined,
    };
  });
}
