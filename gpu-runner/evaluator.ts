/**
 * The runner's protocol-agnostic core: multi-seed evaluation, summaries and
 * dataset descriptions on top of the worker pool. The gRPC server is a thin
 * adapter over this class; tests and benchmarks can use either.
 */
import { availableParallelism } from "node:os";
import { create, fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { AsyncQueue } from "../core/async-queue.js";
import { ResearchError } from "../core/failure.js";
import type { Logger } from "../core/logger.js";
import {
  DatasetInfoSchema,
  DeviceInfoSchema,
  EvalResultSchema,
  EpochProgressSchema,
  GoalStatus,
  ScriptResultSchema,
  SeedResultSchema,
  SummarizeResponseSchema,
  type DatasetInfo,
  type DescribeRequest,
  type DeviceInfo,
  type EvaluateEventSchema,
  type EvaluateRequest,
  type HealthResponseSchema,
  type ScriptRequest,
  type ScriptResult,
  type SeedResult,
  type SummarizeRequest,
  type SummarizeResponse,
} from "../proto/gen/research/v1/runner_pb.js";
import type { WorkerPool } from "./pool.js";
import { limitsFor, planDescribe, planEvaluation, planScript, planSummary, DEFAULTS, SCRIPT } from "./request.js";
import { aggregate, convergence, ensembleMetrics, goalStatus, overfitting, weakClasses, type SeedOutputs } from "./stats.js";
import type { JobFiles, TerminalEvent, WorkerEvent } from "./worker.js";
import { KEPT_PER_RUN, type WeightStore } from "./weights.js";
import type { Gpu } from "./gpus.js";

type EvaluateEventInit = MessageInitShape<typeof EvaluateEventSchema>;
const JSON_OPTS = { ignoreUnknownFields: true };

export interface EvaluatorOptions {
  pool: WorkerPool;
  /** A separate worker for summaries, dataset descriptions and scripts, so they never wait behind training. */
  quick: WorkerPool;
  dataRoots: string[];
  weights: WeightStore;
  /** The host's GPUs (gpus.ts); empty on a CPU runner. */
  gpus?: Gpu[];
  logger: Logger;
}

function failureOf(e: TerminalEvent): ResearchError {
  return e.kind === "failure"
    ? new ResearchError(e.label, e.message, e.traceback ?? "")
    : new ResearchError("crash", `worker answered "${e.kind}" where another result was expected`);
}

export class Evaluator {
  private readonly threads: number;

  constructor(private readonly opts: EvaluatorOptions) {
    this.threads = Math.max(1, Math.floor(availableParallelism() / opts.pool.stats().slots));
  }

  device(): DeviceInfo {
    const d = this.opts.pool.device;
    return create(DeviceInfoSchema, {
      kind: d?.kind ?? "unknown",
      name: d?.name ?? "",
      torchVersion: d?.torch_version ?? "",
      sandboxed: this.opts.pool.sandboxed,
      gpus: d?.kind === "cuda" ? this.gpus().length : 0,
      gpuMemoryMb: BigInt(d?.kind === "cuda" ? (this.gpus()[0]?.memoryMb ?? 0) : 0),
    });
  }

  private gpus(): Gpu[] {
    return this.opts.gpus ?? [];
  }

  /**
   * Each seed's share of its GPU's memory (torch's per-process cap), so one
   * trial's growth ends in its own OOM rather than another slot's: the slots
   * pinned to one GPU split it evenly. 0 (no cap) on CPU.
   */
  private gpuMemoryFraction(): number {
    if (this.opts.pool.device?.kind !== "cuda") return 0;
    return 1 / Math.ceil(this.opts.pool.stats().slots / Math.max(1, this.gpus().length));
  }

  health(): MessageInitShape<typeof HealthResponseSchema> {
    const s = this.opts.pool.stats();
    return { device: this.device(), slots: s.slots, freeSlots: s.free, queueDepth: s.queueDepth, workersReady: s.ready };
  }

  /**
   * Streams started, per-epoch progress, per-seed completions and then one
   * result or one failure. Seeds run concurrently on free slots; the first
   * failing seed cancels the rest, since a broken model fails every seed.
   * Throws ResearchError("invalid_config") before streaming for a bad request.
   */
  evaluate(req: EvaluateRequest, signal?: AbortSignal): AsyncIterable<EvaluateEventInit> {
    const plan = planEvaluation(req, this.opts.dataRoots);
    const log = this.opts.logger.child({ run_id: req.runId, trial_id: req.trialId });
    const weights = this.opts.weights;
    const seeds = Array.from({ length: plan.seeds }, (_, i) => plan.baseSeed + i);
    const missing = req.weightsOf ? seeds.filter((s) => !weights.has(req.runId, req.weightsOf, s)) : [];
    if (missing.length) {
      throw new ResearchError(
        "invalid_config",
        `no weights kept for trial ${req.weightsOf} seed ${missing.join(", ")} (the runner keeps its run's best ${KEPT_PER_RUN} trials by validation mean, while it runs)`,
      );
    }
    const filesOf = (seed: number): JobFiles | undefined =>
      req.weightsOf ? { load: weights.file(req.runId, req.weightsOf, seed) } : req.keepWeights ? { keep: weights.file(req.runId, req.trialId, seed) } : undefined;
    const out = new AsyncQueue<EvaluateEventInit>();
    const abort = new AbortController();
    const onCallerAbort = () => abort.abort();
    signal?.addEventListener("abort", onCallerAbort, { once: true });

    const t0 = Date.now();
    let started = false;
    // Every seed gets the whole budget from the moment it starts: time spent
    // queued behind other evaluations' seeds is the runner's load, not this model's cost.
    const limits = limitsFor(plan.timeBudgetS, plan.memoryLimitMb, this.threads, this.gpuMemoryFraction());
    const startSeed = () => {
      if (!started) {
        started = true;
        out.push({ event: { case: "started", value: { device: this.device(), seeds: plan.seeds, queuedS: (Date.now() - t0) / 1000 } } });
      }
      return limits;
    };

    const runSeed = async (seed: number): Promise<SeedResult> => {
      const onEvent = (e: WorkerEvent) => {
        if (e.kind === "epoch") out.push({ event: { case: "progress", value: fromJson(EpochProgressSchema, e as JsonValue, JSON_OPTS) } });
      };
      const makeSpec = () => ({ ...plan.job, seed, threads: this.threads, limits: startSeed() });
      const end = await this.opts.pool.run("train", makeSpec, onEvent, abort.signal, filesOf(seed));
      if (end.kind !== "result") throw failureOf(end);
      const result = fromJson(SeedResultSchema, end as JsonValue, JSON_OPTS);
      out.push({ event: { case: "seedFinished", value: { seed, valAccuracy: result.metrics.val_accuracy ?? 0, seconds: result.seconds } } });
      seedInfo ??= end;
      outputs.set(seed, seedOutputs(end));
      return result;
    };

    let seedInfo: TerminalEvent | undefined;
    const outputs = new Map<number, ReturnType<typeof seedOutputs>>();
    Promise.all(seeds.map((s) => runSeed(s).catch((f) => (abort.abort(), Promise.reject(f)))))
      .then((results) => {
        const info = seedInfo as Record<string, unknown> | undefined;
        const result = this.result(results, plan.target, (Date.now() - t0) / 1000, info);
        Object.assign(result.aggregated, ensembleMetrics(seeds.map((s) => outputs.get(s)!)));
        if (req.keepWeights) weights.settle(req.runId, req.trialId, result.aggregated.val_accuracy?.mean);
        out.push({ event: { case: "result", value: result } });
        log.info({ seeds: results.length, seconds: (Date.now() - t0) / 1000 }, "evaluation finished");
      })
      .catch((err: unknown) => {
        if (req.keepWeights) weights.settle(req.runId, req.trialId, undefined);
        if (!signal?.aborted) {
          const f = ResearchError.from(err);
          out.push({ event: { case: "failure", value: f.toProto() } });
          log.info({ label: f.label, message: f.message }, "evaluation failed");
        }
      })
      .finally(() => {
        signal?.removeEventListener("abort", onCallerAbort);
        out.close();
      });
    return out;
  }

  private result(seeds: SeedResult[], target: number, seconds: number, info: Record<string, unknown> | undefined) {
    const agg = aggregate(seeds);
    const status = goalStatus(agg.val_accuracy, target);
    const best = seeds.reduce((a, b) => ((b.metrics.val_accuracy ?? 0) > (a.metrics.val_accuracy ?? 0) ? b : a));
    return create(EvalResultSchema, {
      aggregated: agg,
      seedResults: seeds,
      bestSeed: best.seed,
      numSeeds: seeds.length,
      goalAchieved: status === GoalStatus.ACHIEVED,
      goalStatus: status,
      target,
      overfitting: overfitting(seeds),
      convergence: convergence(seeds),
      params: BigInt(Number(info?.params ?? 0)),
      seconds,
      device: { ...this.device(), ...deviceOf(info) },
      numClasses: Number(info?.num_classes ?? 0),
      classNames: Array.isArray(info?.class_names) ? (info.class_names as unknown[]).map(String) : [],
      weakClasses: weakClasses(seeds),
    });
  }

  async summarize(req: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResponse> {
    const job = planSummary(req);
    const limits = limitsFor(120, DEFAULTS.memoryLimitMb, 1);
    const end = await this.opts.quick.run("summarize", () => ({ ...job, threads: 1, limits }), () => {}, signal);
    if (end.kind === "summary") return fromJson(SummarizeResponseSchema, end as JsonValue, JSON_OPTS);
    return create(SummarizeResponseSchema, { failure: failureOf(end).toProto() });
  }

  async describe(req: DescribeRequest, signal?: AbortSignal): Promise<DatasetInfo> {
    const job = planDescribe(req.dataset, this.opts.dataRoots);
    const limits = limitsFor(300, DEFAULTS.memoryLimitMb, 1);
    const end = await this.opts.quick.run("describe", () => ({ ...job, threads: 1, limits }), () => {}, signal);
    if (end.kind === "dataset") return fromJson(DatasetInfoSchema, end as JsonValue, JSON_OPTS);
    return create(DatasetInfoSchema, { failure: failureOf(end).toProto() });
  }

  /** A script's own failure (an exception, a non-zero exit, its timeout) is a result; only a job that could not run it is a failure. */
  async runScript(req: ScriptRequest, signal?: AbortSignal): Promise<ScriptResult> {
    const plan = planScript(req);
    const limits = limitsFor(plan.timeoutS + SCRIPT.graceS, DEFAULTS.memoryLimitMb, 1);
    const end = await this.opts.quick.run("script", () => ({ ...plan.job, limits }), () => {}, signal);
    if (end.kind === "script") return fromJson(ScriptResultSchema, end as JsonValue, JSON_OPTS);
    return create(ScriptResultSchema, { exitCode: -1, failure: failureOf(end).toProto() });
  }
}

/** The per-example outputs a test confirmation's seed returns (trainer.py), if any. */
function seedOutputs(end: TerminalEvent): { val?: SeedOutputs; test?: SeedOutputs } {
  const e = end as Record<string, unknown>;
  const of = (split: string): SeedOutputs | undefined =>
    Array.isArray(e[`${split}_probs`]) ? { probs: e[`${split}_probs`] as number[][], labels: e[`${split}_labels`] as number[] } : undefined;
  return { val: of("val"), test: of("test") };
}

function deviceOf(info: Record<string, unknown> | undefined): Partial<DeviceInfo> {
  const d = info?.device as { kind?: string; name?: string } | undefined;
  return d?.name ? { kind: d.kind ?? "", name: d.name } : {};
}
