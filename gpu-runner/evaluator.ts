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
import { setMaxListeners } from "node:events";
import { create, fromJson, toJsonString, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { join } from "node:path";
import { standingOf } from "../core/ranking.js";
import { utility, type Objective } from "../core/objective.js";
import { learningOf } from "../core/learning/index.js";
import { TASK } from "../core/enums.js";
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
import { limitsFor, planDescribe, planEvaluation, planScript, planSummary, DEFAULTS, SCRIPT } from "./request.js";
import type { MetricStats } from "../proto/gen/research/v1/runner_pb.js";
import { Flights, FlightStore } from "./flights.js";
import { FailureLabel } from "../proto/gen/research/v1/common_pb.js";
import { aggregate, clipToUnit, convergence, describeProportion, describeWithSampling, goalStatus, overfitting, weakClasses } from "./stats.js";
import type { EpochVerdict, JobFiles, TerminalEvent, WorkerEvent } from "./worker.js";
import { KEPT_PER_RUN, type WeightStore } from "./weights.js";
import type { Gpu } from "./gpus.js";
import type { SeedPlacement } from "./device.js";

type EvaluateEventInit = MessageInitShape<typeof EvaluateEventSchema>;
const JSON_OPTS = { ignoreUnknownFields: true };

export interface EvaluatorOptions {
  pool: WorkerPool;
  /** A separate worker for summaries and scripts, so they never wait behind training. */
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

type Prepared = Extract<TerminalEvent, { kind: "prepared" }>;
type Scores = Extract<TerminalEvent, { kind: "scores" }>;
type Part = "val" | "test";

function failureOf(e: TerminalEvent): ResearchError {
  return e.kind === "failure"
    ? new ResearchError(e.label, e.message, e.traceback ?? "")
    : new ResearchError("crash", `worker answered "${e.kind}" where another result was expected`);
}

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
   * Streams started, per-epoch progress, per-seed completions and then one
   * result or one failure. Seeds run concurrently on free slots; the first
   * failing seed cancels the rest, since a broken model fails every seed.
   * Throws ResearchError("invalid_config") before streaming for a bad request.
   */
  evaluate(req: EvaluateRequest, signal?: AbortSignal): AsyncIterable<EvaluateEventInit> {
    const plan = planEvaluation(req, this.opts.dataRoots);
    const goal = plan.objective;
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
    const filesOf = (jobSeeds: number[]): JobFiles =>
      req.weightsOf
        ? { load: weights.file(req.runId, req.weightsOf, jobSeeds[0]!) }
        : {
            ...(req.keepWeights && { keep: jobSeeds.map((s) => weights.file(req.runId, req.trialId, s)) }),
            ...(init && { init: jobSeeds.map((s) => init[s - plan.baseSeed]!) }),
          };
    const out = new AsyncQueue<EvaluateEventInit>();
    const abort = new AbortController();
    // Each seed's job and each scoring of its epochs listens while it runs: eight seeds and their
    // scorings passed Node's leak warning at ten on a GPU host, and none of them is a leak.
    setMaxListeners(64, abort.signal);
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

    // A time-boxed training with a deadline: each seed trains the recipe's time, or what is left to
    // the deadline when it starts, less the most any seed of it spent outside training so far.
    let overheadS = 0;
    const timeBox = (): number | undefined => {
      const planned = plan.job.recipe.train_seconds;
      if (!(plan.deadlineS > 0 && planned > 0)) return undefined;
      return Math.max(1, Math.min(planned, plan.deadlineS - (Date.now() - t0) / 1000 - overheadS));
    };

    const prepared = this.prepare(plan.job.dataset, abort.signal);
    const score = async (part: Part, predictions: unknown[], full: boolean): Promise<Scores> => {
      const end = await this.opts.referee.run("score", () => ({ dataset: plan.job.dataset, part, predictions, full }), () => {}, abort.signal);
      if (end.kind !== "scores") throw failureOf(end);
      return end;
    };

    // One job trains `jobSeeds`: one seed, or several together (python/trainer.py _Stack). Each
    // seed's epochs are scored in order as they arrive, and its result when the job ends. The
    // reason they must train apart, when a model has no batched form.
    const trainJob = async (jobSeeds: number[]): Promise<SeedResult[] | { apart: string }> => {
      const split = await prepared;
      // Accuracy is a classifier's alone; val_metric is the request's metric, whichever it is.
      const seedsOf = new Map(
        jobSeeds.map((seed) => [seed, { scored: Promise.resolve(), best: -Infinity, valCurve: { val_loss: [], val_metric: [], ...(learningOf(goal.task).classes && { val_accuracy: [] }) } as Record<string, number[]>, end: undefined as Record<string, unknown> | undefined }]),
      );
      const onEvent = (e: WorkerEvent, answer: (v: EpochVerdict) => void) => {
        if (e.kind !== "epoch" && e.kind !== "seed_result") return;
        // A seed the job was not given is the model writing events of its own: ignored.
        const mine = seedsOf.get(Number(e.seed));
        if (!mine) return;
        if (e.kind === "seed_result") return void (mine.end = e);
        const { val_predictions: predictions, ...point } = e;
        mine.scored = mine.scored.then(async () => {
          const s = await score("val", [predictions], false);
          const epoch: Record<string, number> = { val_loss: Number(s.val_loss), val_metric: Number(s[goal.key]) };
          if (mine.valCurve.val_accuracy) epoch.val_accuracy = Number(s.val_accuracy);
          for (const [key, value] of Object.entries(epoch)) mine.valCurve[key]!.push(value);
          // The job keeps the weights of the seed's best epoch so far; a tie goes to the later, more trained one.
          const value = utility(goal, epoch.val_metric!);
          const best = Number.isFinite(value) && value >= mine.best;
          answer({ seed: Number(e.seed), epoch: Number(point.epoch), best });
          if (best) mine.best = value;
          const progress = { ...point, ...epoch };
          out.push({ event: { case: "progress", value: fromJson(EpochProgressSchema, progress as JsonValue, JSON_OPTS) } });
        });
        mine.scored.catch(() => {}); // awaited below; a failed score fails the seed there
      };
      const job = { ...plan.job, dataset_id: split.dataset_id, split_id: split.split_id, seed: jobSeeds[0], together: jobSeeds.length, threads: this.threads };
      let trainS: number | undefined;
      const makeSpec = () => {
        trainS = timeBox();
        return { ...job, ...(trainS !== undefined && { recipe: { ...job.recipe, train_seconds: trainS } }), limits: startSeed() };
      };
      const end = await this.opts.pool.run("train", makeSpec, onEvent, abort.signal, { labels: split.labels, ...filesOf(jobSeeds) }, req.seedsAtOnce);
      if (end.kind === "apart") return { apart: end.reason };
      if (end.kind !== "result") throw failureOf(end);
      if (jobSeeds.length === 1) seedsOf.get(jobSeeds[0]!)!.end = end;
      return Promise.all(
        jobSeeds.map(async (seed) => {
          const { end: seedEnd, scored, valCurve } = seedsOf.get(seed)!;
          if (seedEnd === undefined) throw new ResearchError("crash", `the job of seeds ${jobSeeds.join(", ")} ended without seed ${seed}'s result`);
          if (trainS !== undefined) {
            overheadS = Math.max(overheadS, Number(seedEnd.seconds) - trainS);
            if (trainS < plan.job.recipe.train_seconds) log.info({ seed, train_seconds: trainS, planned: plan.job.recipe.train_seconds }, "seed started late: trains less to end by the deadline");
          }
          await scored;
          const { val_predictions: val, test_predictions: test, ...rest } = seedEnd;
          const [v, t] = await Promise.all([score("val", [val], true), test ? score("test", [test], true) : undefined]);
          const curve = { ...(rest.learning_curve as Record<string, number[]>), ...valCurve };
          const scoredResult = {
            ...rest,
            seeds_together: jobSeeds.length,
            metrics: { ...(rest.metrics as Record<string, number>), ...(v.metrics as object), ...(t?.metrics as object | undefined) },
            // A regression has no classes.
            ...(v.per_class !== undefined && { per_class: v.per_class, confusion_matrix: v.confusion_matrix }),
            val_examples: v.examples,
            test_examples: t?.examples ?? 0,
            learning_curve: curve,
          };
          const result = fromJson(SeedResultSchema, scoredResult as JsonValue, JSON_OPTS);
          const valMetric = result.metrics[goal.key] ?? 0;
          out.push({ event: { case: "seedFinished", value: { seed, valAccuracy: result.metrics.val_accuracy ?? 0, valMetric, seconds: result.seconds } } });
          seedInfo ??= seedEnd;
          predictions.set(seed, { val, test });
          return result;
        }),
      );
    };

    // Seeds apart: a job each, side by side on free slots. Together: jobs of up to maxTogether
    // seeds, and a job each for seeds whose model vmap cannot run (said in the result).
    let apartBecause = "";
    const modelKey = JSON.stringify([plan.job.source, plan.job.class_name, plan.job.init_kwargs]);
    const runSeeds = async (): Promise<SeedResult[]> => {
      // A one-seed job never answers apart (only seeds together can: trainer.py _Stack.of).
      const apart = (list: number[]) => Promise.all(list.map((s) => trainJob([s]) as Promise<SeedResult[]>)).then((r) => r.flat());
      // Loaded weights (the test confirmation) train nothing: one seed a job.
      const groupable = this.together && !req.weightsOf && seeds.length > 1;
      const known = this.apart.get(modelKey);
      if (!groupable || known !== undefined) {
        apartBecause = (groupable && known) || "";
        return apart(seeds);
      }
      const jobs = Array.from({ length: Math.ceil(seeds.length / DEFAULTS.maxTogether) }, (_, i) => seeds.slice(i * DEFAULTS.maxTogether, (i + 1) * DEFAULTS.maxTogether));
      const results = await Promise.all(
        jobs.map(async (jobSeeds) => {
          // Seeds together hold one slot's share of the memory: out of it, they train apart.
          const got = await trainJob(jobSeeds).catch((err: unknown) => {
            const f = ResearchError.from(err);
            if (f.label !== "oom" || abort.signal.aborted) throw err;
            return { apart: `the ${jobSeeds.length} seeds ran out of memory together: ${f.message}` };
          });
          if (Array.isArray(got)) return got;
          apartBecause = got.apart;
          this.rememberApart(modelKey, got.apart);
          log.info({ seeds: jobSeeds, reason: got.apart }, "seeds train apart");
          return apart(jobSeeds);
        }),
      );
      return results.flat();
    };

    let seedInfo: Record<string, unknown> | undefined;
    const predictions = new Map<number, Record<Part, unknown>>();
    runSeeds()
      .catch((f) => (abort.abort(), Promise.reject(f)))
      .then(async (results) => {
        const info = seedInfo;
        const result = this.result(results, plan.target, goal, (Date.now() - t0) / 1000, info);
        result.seedsApart = apartBecause;
        if (req.evaluateTest) Object.assign(result.aggregated, await this.ensemble(seeds.map((s) => predictions.get(s)!), goal, score));
        if (req.keepWeights) weights.settle(req.runId, req.trialId, standingOf(result, goal));
        out.push({ event: { case: "result", value: result } });
        log.info({ seeds: results.length, seconds: (Date.now() - t0) / 1000 }, "evaluation finished");
      })
      .catch((err: unknown) => {
        if (req.keepWeights) weights.settle(req.runId, req.trialId, undefined);
        if (!signal?.aborted) {
          const f = ResearchError.from(err);
          out.push({ event: { case: "failure", value: f.toProto() } });
          log.info({ label: f.label, message: f.message }, "evaluation failed");
        } else log.info("evaluation cancelled");
      })
      .finally(() => {
        signal?.removeEventListener("abort", onCallerAbort);
        out.close();
      });
    return out;
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
    const end = await this.opts.quick.run("summarize", () => ({ ...job, threads: 1, limits }), () => {}, signal);
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

  /** A script's own failure (an exception, a non-zero exit, its timeout) is a result; only a job that could not run it is a failure. */
  async runScript(req: ScriptRequest, signal?: AbortSignal): Promise<ScriptResult> {
    const plan = planScript(req);
    const limits = limitsFor(plan.timeoutS + SCRIPT.graceS, DEFAULTS.memoryLimitMb, 1);
    const end = await this.opts.quick.run("script", () => ({ ...plan.job, limits }), () => {}, signal);
    if (end.kind === "script") return fromJson(ScriptResultSchema, end as JsonValue, JSON_OPTS);
    return create(ScriptResultSchema, { exitCode: -1, failure: failureOf(end).toProto() });
  }
}

function deviceOf(info: Record<string, unknown> | undefined): Partial<DeviceInfo> {
  const d = info?.device as { kind?: string; name?: string } | undefined;
  return d?.name ? { kind: d.kind ?? "", name: d.name } : {};
}
