/**
 * The run's best model, trained. When a run finishes, the lineage store asks
 * the runners for the weights kept for its best trial (one torch.save'd
 * state_dict per seed) over the runner's FetchWeights stream, so a runner on
 * another host is no different from one beside it, and writes them into the
 * run folder beside that trial's code. Whatever happens, the outcome is a
 * value: the files, and a labelled failure for the seeds that are not there,
 * which the report states. The fetch is bounded by the run's clock.
 */
import { existsSync, statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ResearchError } from "../core/failure.js";
import type { Logger } from "../core/logger.js";
import { downloadWeights, type RunnerClient } from "../gpu-runner/client.js";
import type { Failure } from "../proto/gen/research/v1/common_pb.js";
import type { RunFinished } from "../proto/gen/research/v1/events_pb.js";
import { budgetPlan } from "../swarm/budget.js";
import type { RunState } from "../swarm/run-state.js";
import { kwargsSent } from "../core/config-wire.js";

/**
 * The fetch comes out of the report's reserve (swarm/budget.ts), leaving the
 * report a second of what the run has left. It gets at least FETCH_MIN_MS, so
 * a run that closes at its budget's edge still gets a nearby runner's weights
 * (an overrun of at most that), and at most FETCH_MAX_MS, so a runner far
 * away or stuck never holds the report back for long.
 */
const FETCH_MIN_MS = 2_000;
const FETCH_MAX_MS = 10_000;
const REPORT_MS = 1_000;

export interface WeightsExport {
  /** What to build before loading a file: the class in the code beside it, with these keyword arguments. */
  className: string;
  initKwargs: Record<string, number | boolean>;
  /** Relative to the run folder, by seed. */
  files: { seed: number; path: string; bytes: number }[];
  /** Why some or all of the trial's seeds have no file. */
  failure?: Failure;
  seconds: number;
}

/**
 * Writes the best trial's weights to `fileOf(seed)` (relative to the run
 * folder) from the first runner that has them, answering ones first.
 * Undefined when the run has no best trial with code. Files already there (a
 * redelivered RunFinished, the runner perhaps gone since) are kept as they are.
 */
export async function exportBestWeights(
  runDir: string,
  state: RunState,
  finished: RunFinished,
  runners: RunnerClient[],
  fileOf: (seed: number) => string,
  log: Logger,
): Promise<WeightsExport | undefined> {
  const best = state.trials.get(finished.bestTrialId);
  const model = best?.assembled?.request?.model;
  if (!best || !model?.code) return undefined;
  const t0 = Date.now();
  const seeds = (best.evaluated?.result?.seedResults ?? []).map((s) => s.seed);
  const out: WeightsExport = { className: model.className, initKwargs: kwargsSent(model) as WeightsExport["initKwargs"], files: [], seconds: 0 };
  const onDisk = (seed: number) => ({ seed, path: fileOf(seed), bytes: statSync(join(runDir, fileOf(seed))).size });
  if (seeds.length && seeds.every((s) => existsSync(join(runDir, fileOf(s))))) return { ...out, files: seeds.map(onDisk) };

  const timeoutMs = Math.min(FETCH_MAX_MS, Math.max(FETCH_MIN_MS, budgetPlan(state, t0).remainingS * 1000 - REPORT_MS));
  const deadline = t0 + timeoutMs;
  let failure = runners.length ? undefined : new ResearchError("runner_unavailable", "no runner is configured to fetch them from");
  await mkdir(dirname(join(runDir, fileOf(0))), { recursive: true });
  for (const runner of runners) {
    if (Date.now() >= deadline) break;
    try {
      const files = await downloadWeights(runner, { runId: state.runId, trialId: best.id }, (seed) => join(runDir, fileOf(seed)), { timeoutMs: deadline - Date.now() });
      out.files = files.map((f) => ({ seed: f.seed, path: fileOf(f.seed), bytes: f.bytes }));
      failure = undefined;
      break;
    } catch (err) {
      // One without them says so at once; the next may be the one that trained the trial.
      failure = ResearchError.from(err);
      log.warn({ trial_id: best.id, label: failure.label, err: failure.message }, "a runner could not send the best trial's weights");
    }
  }
  const missing = seeds.filter((s) => !out.files.some((f) => f.seed === s));
  if (!failure && missing.length) failure = new ResearchError("invalid_config", `the runner kept no weights for seed ${missing.join(", ")}`);
  out.seconds = (Date.now() - t0) / 1000;
  out.failure = failure?.toProto();
  const bytes = out.files.reduce((n, f) => n + f.bytes, 0);
  if (failure) log.warn({ trial_id: best.id, label: failure.label, err: failure.message, files: out.files.length }, "the best trial's weights are not all in the run folder");
  else log.info({ trial_id: best.id, seeds: out.files.length, bytes, seconds: out.seconds }, "the best trial's weights are in the run folder");
  return out;
}
