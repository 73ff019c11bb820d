/**
 * The runner's protocol-agnostic core: multi-seed evaluation, summaries and
 * dataset descriptions on top of the worker pools. The gRPC server is a thin
 * adapter over this class; tests and benchmarks can use either.
 *
 * Every validation and test number comes from the referee: a seed's job
 * returns predictions, and the referee, which alone holds those labels,
 * scores them (python/referee.py). A model that rewrites its training loop
 * can misreport its training loss, never its score.
 */
import { randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { create, fromJson, toJsonString, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { join } from "node:path";
import { utility, type Objective } from "../core/objective.js";
import { TASK } from "../core/enums.js";
import { AsyncQueue } from "../core/async-queue.js";
import { ResearchError } from "../core/failure.js";
import type { Logger } from "../core/logger.js";
import {
  DatasetInfoSchema,
  DeviceInfoSchema,
  EvalResultSchema,
  GoalStatus,
  ScriptResultSchema,
  SummarizeResponseSchema,
  Task,
  type DatasetInfo,
  type DescribeRequest,
  type DeviceInfo,
  EvaluateEventSchema,
  type EvaluateRequest,
  type HealthResponseSchema,
  type ScriptRequest,
  type ScriptResult,
  type SeedResult,
  type SummarizeRequest,
  type SummarizeResponse,
} from "../proto/gen/research/v1/runner_pb.js";
import type { WorkerPool } from "./pool.js";
import type { TerminalEvent } from "./worker.js";
import { Evaluation, failureOf, JSON_OPTS, type EvaluateEventInit, type EvaluationRunner, type Part, type Prepared, type Scores } from "./evaluation.js";
import { limitsFor, planDescribe, planEvaluation, planScript, planSummary, DEFAULTS, SCRIPT } from "./request.js";
import type { MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { Flights, FlightStore } from "./flights.js";
import { FailureLabel } from "../proto/gen/research/v1/common_pb.js";
import { aggregate, clipToUnit, convergence, describeProportion, describeWithSampling, goalStatus, overfitting, weakClasses } from "./stats.js";
import { KEPT_PER_RUN, type WeightStore } from "./weights.js";
import type { Gpu } from "./gpus.js";
import type { SeedPlacement } from "./device.js";


export interface EvaluatorOptions {
  pool: WorkerPool;
  /**
   * Summaries' and scripts' own worker, so that they never wait behind training: used when every
   * training slot is busy (quickJob), and started the first time it is.
   */
  quick: WorkerPool;
  /** The referee (python/referee.py): publishes datasets for the workers and scores predictions. */
  referee: WorkerPool;
  dataRoots: string[];
  weights: WeightStore;
  /** Where ended evaluations' answers outlive this process (flights.ts); memory only without it. */
  stateDir?: string;
  /** The host's GPUs (gpus.ts); empty on a CPU runner. */
  gpus?: Gpu[];
  /** Where a trial's seeds train (device.ts SeedPlacement); "auto" by default. */
  seeds?: SeedPlacement;
  logger: Logger;
}

/** Models found to have no batched form, remembered so their next trials go apart at once. */
const APART_REMEMBERED = 256;


/** A list of numbers from a worker's JSON (an absent or malformed one: none). */
const numbers = (v: unknown): number[] => (Array.isArray(v) ? v.map(Number).filter(Number.isFinite) : []);

export class Evaluator {
  private readonly threads: number;
  /** Model (source, class, arguments) -> why its seeds cannot train together. */
  private readonly apart = new Map<string, string>();
  /** Evaluations by idempotency key: a redelivered request trains nothing again. */
  readonly flights: Flights<EvaluateEventInit>;
  /** This process, new at each start (HealthResponse.instance): what a lease on a key names. */
  readonly instance = randomUUID();
  /** What each evaluation takes from this runner (evaluation.ts). */
  private readonly forEvaluation: EvaluationRunner;

  constructor(private readonly opts: EvaluatorOptions) {
    const codec = {
      encode: (events: EvaluateEventInit[]) => `[${events.map((e) => toJsonString(EvaluateEventSchema, create(EvaluateEventSchema, e))).join(",")}]`,
      decode: (text: string) => (JSON.parse(text) as JsonValue[]).map((e) => fromJson(EvaluateEventSchema, e)),
    };
    this.flights = new Flights<EvaluateEventInit>({
      // A result, or a failure that would come again; not an unavailable runner's, which a retry may not meet.
      settled: (events) => {
        const last = events.at(-1)?.event;
        return last?.case === "result" || (last?.case === "failure" && last.value.label !== FailureLabel.RUNNER_UNAVAILABLE);
      },
      store: opts.stateDir ? new FlightStore(join(opts.stateDir, "evaluations"), codec) : undefined,
    });
    this.threads = Math.max(1, Math.floor(availableParallelism() / opts.pool.stats().slots));
    this.forEvaluation = {
      pool: opts.pool,
      referee: opts.referee,
      weights: opts.weights,
      threads: this.threads,
      cores: availableParallelism(),
      together: () => this.together,
      device: () => this.device(),
      limits: (timeBudgetS, memoryLimitMb, threads) => limitsFor(timeBudgetS, memoryLimitMb, threads, this.gpuMemoryFraction()),
      prepare: (dataset, signal) => this.prepare(dataset, signal),
      apartReason: (modelKey) => this.apart.get(modelKey),
      rememberApart: (modelKey, reason) => this.rememberApart(modelKey, reason),
      result: (...args) => this.result(...args),
      ensemble: (...args) => this.ensemble(...args),
    };
  }

  device(): DeviceInfo {
    const d = this.opts.pool.device;
    return create(DeviceInfoSchema, {
      kind: d?.kind ?? "unknown",
      // The fork server cannot ask CUDA for the GPU's name without initialising it; nvidia-smi knows it.
      name: (d?.kind === "cuda" && this.gpus()[0]?.name) || (d?.name ?? ""),
      torchVersion: d?.torch_version ?? "",
      sandboxed: this.opts.pool.sandboxed,
      gpus: d?.kind === "cuda" ? this.gpus().length : 0,
      gpuMemoryMb: BigInt(d?.kind === "cuda" ? (this.gpus()[0]?.memoryMb ?? 0) : 0),
    });
  }

  private gpus(): Gpu[] {
    return this.opts.gpus ?? [];
  }

  private get together(): boolean {
    const placement = this.opts.seeds ?? "auto";
    return placement === "together" || (placement === "auto" && this.opts.pool.device?.kind === "cuda");
  }

  private rememberApart(modelKey: string, reason: string): void {
    this.apart.set(modelKey, reason);
    if (this.apart.size > APART_REMEMBERED) this.apart.delete(this.apart.keys().next().value!);
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
    const f = this.flights.counts;
    return {
      device: this.device(),
      slots: s.slots,
      freeSlots: s.free,
      queueDepth: s.queueDepth,
      workersReady: s.ready,
      evaluationsStarted: BigInt(f.started),
      evaluationsJoined: BigInt(f.joined),
      instance: this.instance,
    };
  }

  /**
   * `evaluate`, once per idempotency key (flights.ts): a duplicate request joins the evaluation of
   * its key. A request whose lease named an earlier process at this address (this one restarted
   * since) starts nothing new: its key's lease may have moved, while this process was down, to a
   * runner that trains it now (a duplicate once trained beside it in the chaos test).
   */
  evaluateOnce(req: EvaluateRequest, signal?: AbortSignal): AsyncIterable<EvaluateEventInit> {
    const key = req.idempotencyKey;
    if (!key) return this.evaluate(req, signal);
    if (req.runnerInstance && req.runnerInstance !== this.instance && !this.flights.has(key)) {
      this.opts.logger.info({ key, leased_to: req.runnerInstance }, "evaluation refused: its lease names this runner's previous process");
      const out = new AsyncQueue<EvaluateEventInit>();
      const f = new ResearchError("runner_unavailable", "this runner restarted since the evaluation's lease was taken: read the lease again");
      out.push({ event: { case: "failure", value: f.toProto() } });
      out.close();
      return out;
    }
    return this.flights.join(key, (s) => this.evaluate(req, s), signal);
  }

  /**
   * Streams started, per-epoch progress, per-seed completions and then one result or one failure
   * (evaluation.ts). Throws ResearchError("invalid_config") before streaming for a bad request.
   */
  evaluate(req: EvaluateRequest, signal?: AbortSignal): AsyncIterable<EvaluateEventInit> {
    const plan = planEvaluation(req, this.opts.dataRoots);
    const log = this.opts.logger.child({ run_id: req.runId, trial_id: req.trialId, key: req.idempotencyKey });
    const weights = this.opts.weights;
    const seeds = Array.from({ length: plan.seeds }, (_, i) => plan.baseSeed + i);
    const missing = req.weightsOf ? seeds.filter((s) => !weights.has(req.runId, req.weightsOf, s)) : [];
    if (missing.length) {
      throw new ResearchError(
        "invalid_config",
        `no weights kept for trial ${req.weightsOf} seed ${missing.join(", ")} (the runner keeps its run's best ${KEPT_PER_RUN} trials by the run's rule for best, while it runs)`,
      );
    }
    const init = req.initWeights && weights.startFrom(req.initWeights.runId, req.initWeights.trialId, seeds.length);
    // What a count of trainings started reads (the chaos test does, from this runner's own log).
    log.info({ seeds: plan.seeds, training: !req.weightsOf, ...(req.initWeights && { init_weights: req.initWeights.trialId }) }, "evaluation started");
    return new Evaluation(this.forEvaluation, req, plan, seeds, init || undefined, log).run(signal);
  }

  /** The referee loads, splits and publishes the dataset: the ids a job names it by, and its training labels' file. */
  private async prepare(dataset: unknown, signal?: AbortSignal): Promise<Prepared> {
    const end = await this.opts.referee.run("prepare", () => ({ dataset }), () => {}, signal);
    if (end.kind !== "prepared") throw failureOf(end);
    return end;
  }

  /**
   * `ensemble_val_<metric>` and `ensemble_test_<metric>` of a confirmation's
   * seeds as one model (per example, the class of highest mean probability, or
   * the mean predicted value): the seeds are paid for already, and their
   * average is a stronger model than any one of them. One model, so the
   * interval is the evaluation set's sampling error alone.
   */
  private async ensemble(seeds: Record<Part, unknown>[], goal: Objective, score: (part: Part, p: unknown[], full: boolean) => Promise<Scores>) {
    const out: Record<string, MetricStats> = {};
    if (seeds.length < 2) return out;
    for (const part of ["val", "test"] as const) {
      if (seeds.some((s) => s[part] === undefined)) continue;
      const key = `${part}_${goal.metric}`;
      if (goal.proportion) {
        const s = await score(part, seeds.map((x) => x[part]), false);
        out[`ensemble_${key}`] = clipToUnit(describeProportion([Number(s[key])], s.examples));
      } else {
        const { metrics } = (await score(part, seeds.map((x) => x[part]), true)) as { metrics?: Record<string, number> };
        const se = metrics?.[`${key}_se`];
        out[`ensemble_${key}`] = describeWithSampling([Number(metrics?.[key])], se === undefined ? [] : [se]);
      }
    }
    return out;
  }

  private result(seeds: SeedResult[], target: number, goal: Objective, seconds: number, info: Record<string, unknown> | undefined) {
    const agg = aggregate(seeds);
    const status = goalStatus(agg[goal.key], target, goal);
    const value = (s: SeedResult) => utility(goal, s.metrics[goal.key] ?? Number.NaN);
    const best = seeds.reduce((a, b) => (value(b) > value(a) || Number.isNaN(value(a)) ? b : a));
    return create(EvalResultSchema, {
      aggregated: agg,
      seedResults: seeds,
      bestSeed: best.seed,
      numSeeds: seeds.length,
      goalAchieved: status === GoalStatus.ACHIEVED,
      goalStatus: status,
      target,
      overfitting: overfitting(seeds),
      convergence: convergence(seeds, goal),
      params: BigInt(Number(info?.params ?? 0)),
      seconds,
      device: { ...this.device(), ...deviceOf(info) },
      numClasses: Number(info?.num_classes ?? 0),
      classNames: Array.isArray(info?.class_names) ? (info.class_names as unknown[]).map(String) : [],
      weakClasses: weakClasses(seeds),
      inputShape: numbers(info?.input_shape).map(BigInt),
      inputMean: numbers(info?.input_mean),
      inputStd: numbers(info?.input_std),
      targetMean: Number(info?.target_mean ?? 0),
      targetStd: Number(info?.target_std ?? 0),
    });
  }

  async summarize(req: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResponse> {
    const job = planSummary(req);
    const limits = limitsFor(120, DEFAULTS.memoryLimitMb, 1);
    const end = await this.quickJob("summarize", () => ({ ...job, threads: 1, limits }), signal);
    if (end.kind === "summary") return fromJson(SummarizeResponseSchema, end as JsonValue, JSON_OPTS);
    return create(SummarizeResponseSchema, { failure: failureOf(end).toProto() });
  }

  async describe(req: DescribeRequest, signal?: AbortSignal): Promise<DatasetInfo> {
    const { dataset } = planDescribe(req.dataset, this.opts.dataRoots);
    try {
      const { task, ...info } = (await this.prepare(dataset, signal)).info;
      return create(DatasetInfoSchema, { ...fromJson(DatasetInfoSchema, info as JsonValue, JSON_OPTS), task: TASK.value(String(task)) ?? Task.UNSPECIFIED });
    } catch (err) {
      return create(DatasetInfoSchema, { failure: ResearchError.from(err).toProto() });
    }
  }

  /**
   * A summary or a script on a free training slot, else on the quick worker: a run whose slots
   * are never all busy when it asks (a short one, or the first proposals of any) never starts
   * that worker, a fork server's 2-3 CPU-seconds of imports.
   */
  private quickJob(task: "summarize" | "script", makeSpec: () => unknown, signal?: AbortSignal): Promise<TerminalEvent> {
    return (this.opts.pool.hasIdle ? this.opts.pool : this.opts.quick).run(task, makeSpec, () => {}, signal);
  }

  /** A script's own failure (an exception, a non-zero exit, its timeout) is a result; only a job that could not run it is a failure. */
  async runScript(req: ScriptRequest, signal?: AbortSignal): Promise<ScriptResult> {
    const plan = planScript(req);
    const limits = limitsFor(plan.timeoutS + SCRIPT.graceS, DEFAULTS.memoryLimitMb, 1);
    const end = await this.quickJob("script", () => ({ ...plan.job, limits }), signal);
    if (end.kind === "script") return fromJson(ScriptResultSchema, end as JsonValue, JSON_OPTS);
    return create(ScriptResultSchema, { exitCode: -1, failure: failureOf(end).toProto() });
  }
}

function deviceOf(info: Record<string, unknown> | undefined): Partial<DeviceInfo> {
  const d = info?.device as { kind?: string; name?: string } | undefined;
  return d?.name ? { kind: d.kind ?? "", name: d.name } : {};
}
