/**
 * What this run takes from past runs (issue 37), as pure functions of the lineage's rows: how far
 * a past run's dataset is from this one's, and from that the surrogate's prior observations (each
 * discounted by the distance) and the configs a warm start may propose first (only from data that
 * looks the same). agents/planner/main.ts asks the lineage store; policies/builtin.ts proposes.
 *
 * The distance reads the datasets' descriptions as the runner gave them at launch
 * (RunStarted.dataset): data of another task, input type, rank, class count or vocabulary is
 * incomparable (a past accuracy there says nothing of a score here, whose scale depends on the
 * classes); else it adds 1 for another dataset name, 1/2 for other class names, and the log
 * ratios of the training set's size and of each input dimension. Fashion-MNIST against itself
 * is 0; against MNIST (same shapes, other name and classes) 1.5; a CSV against another CSV with
 * the same columns, classes and size 0, which is the "looks alike but is not" case: such a
 * past run's configs are proposed, evaluated here and judged like any other, so a misleading
 * past costs their evaluations, never a result.
 */
import type { TrialModelInput, ModelConfig, TrainConfig } from "../../core/model-config.js";
import { parseModelConfig, parseTrainConfig } from "../../core/model-config.js";
import { datasetNamed } from "../../core/tasks/index.js";
import type { TrialSummary } from "../../proto/gen/research/v1/lineage_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { FailureLabel } from "../../proto/gen/research/v1/common_pb.js";
import { configFingerprint } from "./identity.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import type { PastConfig } from "./types.js";
import { genomeFeatures, type Observation } from "./surrogate.js";
import { modelOfSpec, trainOfSpec } from "../../core/config-wire.js";

/** A past run's result counts half as much as this run's on the same data: other circumstances. */
export const PAST_WEIGHT = 0.5;
/** The farthest a past dataset may be for its configs to be proposed first: the same data, or data that looks the same. */
export const WARM_START_DISTANCE = 0.5;

/**
 * The failures that say a config cannot train, whatever data it meets: it did not build, crashed,
 * ran out of memory or time, diverged, or broke the sandbox. Not a score too low for its data
 * (gate_miss: a lookalike dataset with shuffled labels fails every config that way, and learning
 * that would bar this run's own templates), nor a trial pruned, cancelled or left without a runner.
 */
export const CONFIG_FAULTS: ReadonlySet<FailureLabel> = new Set([
  FailureLabel.INVALID_CONFIG,
  FailureLabel.CODEGEN_ERROR,
  FailureLabel.SHAPE_ERROR,
  FailureLabel.CRASH,
  FailureLabel.OOM,
  FailureLabel.NAN_LOSS,
  FailureLabel.BUDGET_OVERRUN,
  FailureLabel.SANDBOX_VIOLATION,
  FailureLabel.ILLEGAL,
]);

/** A past trial's configs from its lineage row, validated once here: other runs' rows enter the planner only this way. */
export function rowConfigs(row: Pick<TrialSummary, "model" | "train">): { model: ModelConfig; train: TrainConfig } | undefined {
  const model = parseModelConfig(modelOfSpec(row.model));
  const train = parseTrainConfig(trainOfSpec(row.train));
  return model.ok && train.ok ? { model: model.value, train: train.value } : undefined;
}

/** The fingerprints of configs that failed in past runs this one learns from, for a fault of the config: the planner does not propose them again. */
export function pastFailures(rows: readonly TrialSummary[], learns: (runId: string) => boolean): Set<string> {
  const out = new Set<string>();
  for (const t of rows) {
    if (!learns(t.runId) || !CONFIG_FAULTS.has(t.failureLabel)) continue;
    const configs = rowConfigs(t);
    // A row whose configs do not validate cannot match a candidate the planner would propose.
    if (configs) out.add(configFingerprint(configs.model, configs.train));
  }
  return out;
}

const sameList = <T>(a: readonly T[], b: readonly T[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const logRatio = (a: number, b: number) => (a > 0 && b > 0 ? Math.abs(Math.log(a / b)) : a === b ? 0 : Infinity);

/**
 * How far the past dataset `past` is from `here` (0: the same description; Infinity: incomparable).
 * A run recorded before descriptions were (its row carries only the dataset's name) is the same
 * data only when both name the same dataset the runner holds: a name such as "csv" says nothing
 * of which file.
 */
export function datasetDistance(here: DatasetInfo, past: DatasetInfo): number {
  if (!past.inputShape.length || !here.inputShape.length) {
    return past.name === here.name && !datasetNamed(here.name)?.file ? 0 : Infinity;
  }
  if (past.task !== here.task || past.inputDtype !== here.inputDtype || past.numClasses !== here.numClasses || past.vocabSize !== here.vocabSize) return Infinity;
  if (past.inputShape.length !== here.inputShape.length) return Infinity;
  const shape = here.inputShape.reduce((sum, d, i) => sum + logRatio(d, past.inputShape[i]!), 0);
  return (past.name === here.name ? 0 : 1) + (sameList(past.classNames, here.classNames) ? 0 : 0.5) + logRatio(here.nTrain, past.nTrain) + shape;
}

/** What a past trial gives this run: its config, its score there, and the weight its dataset's distance leaves it. */
export interface PastEvidence {
  observations: Observation[];
  /** Accepted probes on data within WARM_START_DISTANCE, strongest first: the warm start's candidates. */
  configs: PastConfig[];
  /**
   * Accepted long trainings (the full training split, for a time: a run's last long training or
   * one continued from it) on data within WARM_START_DISTANCE, strongest first: what a continued
   * training may start from, when the runner still keeps their weights.
   */
  long: PastConfig[];
}

/**
 * The judged rows of other runs this run may learn from, at this run's probe fidelity: each a
 * prior observation for the surrogate weighted PAST_WEIGHT x exp(-distance), and each accepted one
 * on near data a warm-start candidate (its weight kept, for the report).
 */
export function pastEvidence(
  rows: readonly TrialSummary[],
  here: {
    runId: string;
    info: DatasetInfo;
    probe: { subset: number; epochs: number };
    learns: (runId: string) => boolean;
    params: (model: TrialModelInput) => number | string;
  },
): PastEvidence {
  const observations: Observation[] = [];
  const configs: PastConfig[] = [];
  const long: PastConfig[] = [];
  for (const t of rows) {
    if (t.runId === here.runId || !here.learns(t.runId) || t.ciLow === undefined || !t.dataset) continue;
    const distance = datasetDistance(here.info, t.dataset);
    if (!Number.isFinite(distance)) continue;
    const c = rowConfigs(t);
    if (!c) continue;
    const weight = PAST_WEIGHT * Math.exp(-distance);
    if (t.verdict === Verdict.ACCEPT && distance <= WARM_START_DISTANCE && !c.train.subset && (c.train.train_seconds ?? 0) > 0) {
      long.push({ trialId: t.trialId, runId: t.runId, model: c.model, train: c.train, ciLow: t.ciLow, weight });
    }
    if (c.train.subset !== here.probe.subset || c.train.epochs !== here.probe.epochs) continue;
    const params = t.params ?? here.params(c.model);
    if (typeof params !== "number") continue;
    observations.push({ x: genomeFeatures(c.model, c.train, params), y: t.ciLow, weight });
    if (t.verdict === Verdict.ACCEPT && distance <= WARM_START_DISTANCE) {
      configs.push({ trialId: t.trialId, runId: t.runId, model: c.model, train: c.train, ciLow: t.ciLow, weight });
    }
  }
  configs.sort((x, y) => y.ciLow - x.ciLow);
  long.sort((x, y) => y.ciLow - x.ciLow);
  return { observations, configs, long };
}
