/**
 * The human-readable project folder of a run, in the seed MVP's layout
 * (experiments/registry.json, experiments/<trial>/..., src/models/current_model.py,
 * configs/models/current_model_config.yaml, report.md). The lineage-store process calls
 * writeArtifacts for every event of a run, in stream order and one call at a
 * time per run (the registry is read, updated and replaced), after folding the
 * event into the run's state. Every write is derived from the state plus that
 * one event and replaces its file atomically, so replays and redeliveries
 * rewrite the same bytes instead of duplicating anything.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { protoJson } from "../core/proto-json.js";
import { stringify as toYaml } from "yaml";
import { bestTrial, type RunState } from "../swarm/run-state.js";
import { failureLabelOf, paramsOf, valMetricOf, type TrialState } from "../swarm/trial-state.js";
import { labelName } from "../core/failure.js";
import { isId } from "../core/ids.js";
import { SURFACE, type DecisionName, type VerdictName } from "../core/enums.js";
import type { Failure } from "../proto/gen/research/v1/common_pb.js";
import { AnalysisSchema, type Event, type RunFinished } from "../proto/gen/research/v1/events_pb.js";
import { EvalResultSchema, SummarizeResponseSchema } from "../proto/gen/research/v1/runner_pb.js";
import type { RunnerClient } from "../gpu-runner/client.js";
import type { Logger } from "../core/logger.js";
import { exportBestWeights } from "./weights.js";
import { writeFileAtomic, writeReport } from "./report.js";
import { decisionName, verdictName } from "./report-json.js";
import { ResearchError } from "../core/failure.js";
import { INFERENCE_FILE, inferenceSpec } from "./inference-spec.js";
import { modelSent, trainSent } from "../core/config-wire.js";
import type { Objective } from "../core/objective.js";

export const REGISTRY_FILE = "experiments/registry.json";
export const CURRENT_MODEL_FILE = "src/models/current_model.py";
export const CURRENT_CONFIG_FILE = "configs/models/current_model_config.yaml";
/** The best trial's trained weights, one state_dict per seed, beside its code. */
export const currentWeightsFile = (seed: number) => CURRENT_MODEL_FILE.replace(/\.py$/, `_seed-${seed}.pt`);

/** One judged trial in experiments/registry.json, keyed as in the seed MVP. */
export interface RegistryEntry {
  run_id: string;
  trial_id: string;
  /** When the trial was judged (ISO 8601). */
  timestamp: string;
  model_name: string;
  dataset: string;
  /** `val_<metric>_mean` (`val_accuracy_mean`, `val_rmse_mean`, ...): the MVP's key for an accuracy run, the run's metric by its name for any other. */
  metrics_summary: { [K in `${Objective["key"]}_mean`]?: number | null } & {
    ci_95: [number, number] | null;
    std: number | null;
    num_seeds: number;
    params: number | null;
  };
  /** Relative to the run folder. */
  experiment_dir: string;
  decision: DecisionName;
  verdict: VerdictName;
  failure_label: string | null;
}

export function experimentDir(trialId: string): string {
  // A trial id with a separator or ".." could write outside the run folder.
  if (!isId(trialId)) throw new ResearchError("invalid_config", `trial id ${JSON.stringify(trialId)} cannot be used as a directory name`);
  return `experiments/${trialId}`;
}

const jsonText = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

function failureJson(f: Failure): JsonObject {
  return { label: labelName(f.label), message: f.message, traceback: f.traceback };
}

/** A config as its trial was sent it (config-wire.ts); text is what an old event held that was not JSON. */
function configYaml(value: unknown, what: string): string {
  return typeof value === "string" ? `# ${what} was not valid JSON; kept verbatim\n${toYaml(value)}` : toYaml(value ?? {});
}

function modelName(t: TrialState): string {
  // A registry entry needs some name: the class name when the config has none.
  return t.model?.name || t.assembled?.className || t.id;
}

/** A trial's hypothesis.md: who proposed it, from which parents, why. */
export function hypothesisMarkdown(t: TrialState): string {
  const p = t.proposed!;
  const ids = (xs: string[]) => (xs.length ? xs.map((x) => `\`${x}\``).join(", ") : "none");
  return [
    `# ${t.id}`,
    "",
    `- Surface: ${SURFACE.name(p.surface) ?? "unspecified"}`,
    `- Proposed by: ${p.proposer || "unknown"} (proposal #${p.index})`,
    `- Parents: ${ids(p.parentIds)}`,
    `- Adopted concepts: ${p.adoptedConcepts.length ? p.adoptedConcepts.join(", ") : "none"}`,
    "",
    "## Hypothesis",
    "",
    p.hypothesis,
    "",
    "## Rationale",
    "",
    p.rationale || "(none given)",
    "",
  ].join("\n");
}

export function registryEntry(state: RunState, t: TrialState, judgedAtMs: number): RegistryEntry {
  const acc = valMetricOf(t);
  return {
    run_id: state.runId,
    trial_id: t.id,
    timestamp: new Date(judgedAtMs).toISOString(),
    model_name: modelName(t),
    dataset: state.goal?.dataset || t.assembled?.request?.dataset?.name || "",
    metrics_summary: {
      [`${state.objective.key}_mean`]: acc?.mean ?? null,
      ci_95: acc?.ci95.length === 2 ? [acc.ci95[0]!, acc.ci95[1]!] : null,
      std: acc?.std ?? null,
      num_seeds: t.evaluated?.result?.numSeeds ?? 0,
      params: paramsOf(t) ?? null,
    },
    experiment_dir: experimentDir(t.id),
    decision: decisionName(t.judged!.decision),
    verdict: verdictName(t.judged!.verdict),
    failure_label: failureLabelOf(t) ?? null,
  };
}

export async function readRegistry(runDir: string): Promise<RegistryEntry[]> {
  const path = join(runDir, REGISTRY_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value)) throw new ResearchError("crash", `${path} is not a JSON list`);
  return value as RegistryEntry[];
}

/** Upserts by trial id so a redelivered judgement replaces its entry and earlier entries keep their timestamps. */
async function updateRegistry(runDir: string, entry: RegistryEntry): Promise<void> {
  const entries = await readRegistry(runDir);
  const at = entries.findIndex((e) => e.trial_id === entry.trial_id);
  if (at >= 0) entries[at] = entry;
  else entries.push(entry);
  await writeFileAtomic(join(runDir, REGISTRY_FILE), jsonText(entries));
}

async function writeCurrentModel(runDir: string, state: RunState, t: TrialState): Promise<void> {
  if (!t.assembled?.code) return;
  const spec = inferenceSpec(state, t);
  await Promise.all([
    writeFileAtomic(join(runDir, CURRENT_MODEL_FILE), t.assembled.code),
    writeFileAtomic(join(runDir, CURRENT_CONFIG_FILE), configYaml(t.proposed && modelSent(t.proposed), "model_config")),
    spec && writeFileAtomic(join(runDir, INFERENCE_FILE), jsonText(spec)),
  ]);
}


/** Where the best trial's weights come from at the end of a run; without it the report says none were fetched. */
export interface WeightsSource {
  runners: RunnerClient[];
  /** The run's logger, bound to no trial: its lines name the best trial, which need not be the handled event's. */
  log: Logger;
}

export async function writeArtifacts(runDir: string, state: RunState, event: Event, weightsFrom?: WeightsSource): Promise<void> {
  const body = event.body;
  const t = event.trialId ? state.trials.get(event.trialId) : undefined;
  const file = (name: string) => join(runDir, experimentDir(event.trialId), name);
  switch (body.case) {
    case "trialProposed": {
      if (!t?.proposed) return;
      await Promise.all([
        writeFileAtomic(file("model_config.yaml"), configYaml(modelSent(t.proposed), "model_config")),
        writeFileAtomic(file("train_config.yaml"), configYaml(trainSent(t.proposed), "train_config")),
        writeFileAtomic(file("hypothesis.md"), hypothesisMarkdown(t)),
      ]);
      return;
    }
    case "trialAssembled": {
      const a = body.value;
      const summary = a.summary ?? create(SummarizeResponseSchema);
      const failure = summary.failure ?? a.failure;
      const summaryJson = { ...protoJson(SummarizeResponseSchema, summary), ...(failure ? { failure: failureJson(failure) } : {}) };
      await Promise.all([
        a.code ? writeFileAtomic(file("model_code.py"), a.code) : undefined,
        a.diff.trim() ? writeFileAtomic(file("code.diff"), a.diff) : undefined,
        writeFileAtomic(file("summary.json"), jsonText(summaryJson)),
      ]);
      return;
    }
    case "trialEvaluated": {
      const v = body.value;
      const results: JsonObject = {
        ...(v.result ? protoJson(EvalResultSchema, v.result) : {}),
        eval_seconds: v.evalSeconds,
        ...(v.analysis ? { analysis: protoJson(AnalysisSchema, v.analysis) } : {}),
        ...(v.failure ? { failure: failureJson(v.failure) } : {}),
      };
      await writeFileAtomic(file("results.json"), jsonText(results));
      break;
    }
    case "trialJudged": {
      if (!t?.judged) return;
      const at = Number(event.emittedAtMs) || Date.now();
      await updateRegistry(runDir, registryEntry(state, t, at));
      if (bestTrial(state)?.id === t.id && !state.runFinished) await writeCurrentModel(runDir, state, t);
      break;
    }
    case "runFinished":
      return writeRunEnd(runDir, state, body.value, weightsFrom);
    default:
      return;
  }
  // A trial's evaluation or verdict that came after the run's end (the store takes each kind of
  // event on its own, so one redelivered after a restart can): the report again, with it in.
  if (state.runFinished) await writeRunEnd(runDir, state, state.runFinished, weightsFrom);
}

/** The finished run's best model, its weights and its report. */
async function writeRunEnd(runDir: string, state: RunState, finished: RunFinished, weightsFrom: WeightsSource | undefined): Promise<void> {
  const judgedAtMs = new Map((await readRegistry(runDir)).map((e) => [e.trial_id, Date.parse(e.timestamp)]));
  const best = state.trials.get(finished.bestTrialId);
  // The weights are the finished run's best trial's: the code beside them must be that trial's too.
  if (best) await writeCurrentModel(runDir, state, best);
  const weights = weightsFrom && (await exportBestWeights(runDir, state, finished, weightsFrom.runners, currentWeightsFile, weightsFrom.log));
  await writeReport(runDir, state, finished, { judgedAtMs }, weights);
}
