/**
 * One evaluation while its seeds train (Evaluator.evaluate): its jobs on the runner's pool, each
 * seed's epochs scored by the referee in order as they arrive, and the stream the caller reads:
 * started, per-epoch progress, per-seed completions, then one result or one failure. Seeds run
 * concurrently on free slots; the first failing seed cancels the rest, since a broken model fails
 * every seed.
 */
import { setMaxListeners } from "node:events";
import { fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { standingOf } from "../core/ranking.js";
import { utility, type Objective } from "../core/objective.js";
import { learningOf } from "../core/learning/index.js";
import { AsyncQueue } from "../core/async-queue.js";
import { ResearchError } from "../core/failure.js";
import type { Logger } from "../core/logger.js";
import {
  EpochProgressSchema,
  SeedResultSchema,
  type DeviceInfo,
  type EvalResult,
  type EvaluateEventSchema,
  type EvaluateRequest,
  type MetricStats,
  type SeedResult,
} from "../proto/gen/research/v1/runner_pb.js";
import type { WorkerPool } from "./pool.js";
import { DEFAULTS, type Limits, type planEvaluation } from "./request.js";
import type { EpochVerdict, JobFiles, TerminalEvent, WorkerEvent } from "./worker.js";
import type { WeightStore } from "./weights.js";

export type EvaluateEventInit = MessageInitShape<typeof EvaluateEventSchema>;
export type Prepared = Extract<TerminalEvent, { kind: "prepared" }>;
export type Scores = Extract<TerminalEvent, { kind: "scores" }>;
export type Part = "val" | "test";
export const JSON_OPTS = { ignoreUnknownFields: true };

export function failureOf(e: TerminalEvent): ResearchError {
  return e.kind === "failure"
    ? new ResearchError(e.label, e.message, e.traceback ?? "")
    : new ResearchError("crash", `worker answered "${e.kind}" where another result was expected`);
}

/** What an evaluation takes from its runner (the Evaluator). */
export interface EvaluationRunner {
  pool: WorkerPool;
  referee: WorkerPool;
  weights: WeightStore;
  /** A job's threads on its slot: the host's cores over the slots. */
  threads: number;
  /** The host's cores, which seeds started at once share (jobThreads). */
  cores: number;
  /** Whether a trial's seeds train together in one job (device.ts SeedPlacement). */
  together(): boolean;
  device(): DeviceInfo;
  limits(timeBudgetS: number, memoryLimitMb: number, threads: number): Limits;
  prepare(dataset: unknown, signal?: AbortSignal): Promise<Prepared>;
  /** Why a model's seeds cannot train together, when a trial of it found so. */
  apartReason(modelKey: string): string | undefined;
  rememberApart(modelKey: string, reason: string): void;
  result(seeds: SeedResult[], target: number, goal: Objective, seconds: number, info: Record<string, unknown> | undefined): EvalResult;
  ensemble(seeds: Record<Part, unknown>[], goal: Objective, score: (part: Part, p: unknown[], full: boolean) => Promise<Scores>): Promise<Record<string, MetricStats>>;
}

type Plan = ReturnType<typeof planEvaluation>;

/**
 * Threads each job of an evaluation of `seeds` seeds gets: its slot's share of the cores, or,
 * for seeds started at once on a CPU (EvaluateRequest.seeds_at_once, each seed its own job), an
 * equal share of every core: three seeds on two cores one thread each, as on their slots; a lone
 * seed all of them (a target's promotion that has the runner to itself, agents/planner/promotion.ts
 * quickestPath). Seeds trained together are one job on their slot.
 */
export function jobThreads(runner: Pick<EvaluationRunner, "threads" | "cores" | "together">, seedsAtOnce: boolean, seeds: number): number {
  return seedsAtOnce && !runner.together() ? Math.max(runner.threads, Math.floor(runner.cores / Math.max(1, seeds))) : runner.threads;
}

/** A seed of a job as its epochs arrive: their scoring in order, its best so far, its validation curve, its result. */
interface SeedInJob {
  scored: Promise<void>;
  best: number;
  valCurve: Record<string, number[]>;
  end: Record<string, unknown> | undefined;
}

export class Evaluation {
  readonly out = new AsyncQueue<EvaluateEventInit>();
  private readonly abort = new AbortController();
  private readonly t0 = Date.now();
  private readonly goal: Objective;
  private readonly limits: Limits;
  /** Each of this evaluation's jobs' threads (jobThreads). */
  private readonly threads: number;
  private readonly prepared: Promise<Prepared>;
  private started = false;
  /** When the first seed's job started (timeBox): seeds at once are late from there, not from the request. */
  private firstSeedAtMs: number | undefined;
  /** The most any seed of a time-boxed training spent outside training so far (timeBox). */
  private overheadS = 0;
  private seedInfo: Record<string, unknown> | undefined;
  private readonly predictions = new Map<number, Record<Part, unknown>>();
  private apartBecause = "";

  constructor(
    private readonly runner: EvaluationRunner,
    private readonly req: EvaluateRequest,
    private readonly plan: Plan,
    private readonly seeds: number[],
    /** The weights each seed starts from (EvaluateRequest.init_weights), by its place among `seeds`. */
    private readonly init: string[] | undefined,
    private readonly log: Logger,
  ) {
    this.goal = plan.objective;
    // Each seed's job and each scoring of its epochs listens while it runs: eight seeds and their
    // scorings passed Node's leak warning at ten on a GPU host, and none of them is a leak.
    setMaxListeners(64, this.abort.signal);
    // Every seed gets the whole budget from the moment it starts: time spent
    // queued behind other evaluations' seeds is the runner's load, not this model's cost.
    this.threads = jobThreads(runner, req.seedsAtOnce, seeds.length);
    this.limits = runner.limits(plan.timeBudgetS, plan.memoryLimitMb, this.threads);
    this.prepared = runner.prepare(plan.job.dataset, this.abort.signal);
  }

  /** Starts the seeds; the stream ends with the result or a failure (none when `signal` cancelled it). */
  run(signal?: AbortSignal): AsyncIterable<EvaluateEventInit> {
    const { req, runner, log } = this;
    const onCallerAbort = () => this.abort.abort();
    signal?.addEventListener("abort", onCallerAbort, { once: true });
    this.runSeeds()
      .catch((f) => (this.abort.abort(), Promise.reject(f)))
      .then(async (results) => {
        const result = runner.result(results, this.plan.target, this.goal, (Date.now() - this.t0) / 1000, this.seedInfo);
        result.seedsApart = this.apartBecause;
        if (req.evaluateTest) Object.assign(result.aggregated, await runner.ensemble(this.seeds.map((s) => this.predictions.get(s)!), this.goal, (p, x, full) => this.score(p, x, full)));
        if (req.keepWeights) runner.weights.settle(req.runId, req.trialId, standingOf(result, this.goal));
        this.out.push({ event: { case: "result", value: result } });
        log.info({ seeds: results.length, seconds: (Date.now() - this.t0) / 1000 }, "evaluation finished");
      })
      .catch((err: unknown) => {
        if (req.keepWeights) runner.weights.settle(req.runId, req.trialId, undefined);
        if (!signal?.aborted) {
          const f = ResearchError.from(err);
          this.out.push({ event: { case: "failure", value: f.toProto() } });
          log.info({ label: f.label, message: f.message }, "evaluation failed");
        } else log.info("evaluation cancelled");
      })
      .finally(() => {
        signal?.removeEventListener("abort", onCallerAbort);
        this.out.close();
      });
    return this.out;
  }

  /** A seed's limits as it starts; the first start says "started". */
  private startSeed() {
    if (!this.started) {
      this.started = true;
      this.out.push({ event: { case: "started", value: { device: this.runner.device(), seeds: this.plan.seeds, queuedS: (Date.now() - this.t0) / 1000 } } });
    }
    return this.limits;
  }

  /**
   * A time-boxed training with a deadline: each seed trains the recipe's time, or what is left to
   * the deadline when it starts, less the most any seed of it spent outside training so far.
   * Seeds started at once were planned to start with the first of them: one that starts later
   * (behind a spare worker's start, 5-6 s on two busy cores) trains that much less, since none of
   * them has ended to say what its end costs. The request's wait for its first worker is no seed's
   * lateness: the deadline bounds it.
   */
  private timeBox(): number | undefined {
    const planned = this.plan.job.recipe.train_seconds;
    // A confirmation loads its weights and trains nothing.
    if (!(this.plan.deadlineS > 0 && planned > 0) || this.req.weightsOf) return undefined;
    const now = Date.now();
    this.firstSeedAtMs ??= now;
    const elapsed = (now - this.t0) / 1000;
    const late = this.req.seedsAtOnce ? planned - (now - this.firstSeedAtMs) / 1000 : planned;
    return Math.max(1, Math.min(late, this.plan.deadlineS - elapsed - this.overheadS));
  }

  private async score(part: Part, predictions: unknown[], full: boolean): Promise<Scores> {
    const end = await this.runner.referee.run("score", () => ({ dataset: this.plan.job.dataset, part, predictions, full }), () => {}, this.abort.signal);
    if (end.kind !== "scores") throw failureOf(end);
    return end;
  }

  /** The files a job of `jobSeeds` takes in or leaves: the weights it loads, keeps, or starts from. */
  private filesOf(jobSeeds: number[]): JobFiles {
    const { req, runner, init } = this;
    if (req.weightsOf) return { load: runner.weights.file(req.runId, req.weightsOf, jobSeeds[0]!) };
    return {
      ...(req.keepWeights && { keep: jobSeeds.map((s) => runner.weights.file(req.runId, req.trialId, s)) }),
      ...(init && { init: jobSeeds.map((s) => init[s - this.plan.baseSeed]!) }),
    };
  }

  /**
   * A job's epoch of one of its seeds, scored after the seed's earlier ones: its point of the
   * validation curve, whether it is the seed's best so far (the job keeps that epoch's weights; a
   * tie goes to the later, more trained one), and its progress event.
   */
  private scoreEpoch(mine: SeedInJob, e: Extract<WorkerEvent, { kind: "epoch" }>, answer: (v: EpochVerdict) => void): void {
    const { val_predictions: predictions, ...point } = e;
    mine.scored = mine.scored.then(async () => {
      const s = await this.score("val", [predictions], false);
      const epoch: Record<string, number> = { val_loss: Number(s.val_loss), val_metric: Number(s[this.goal.key]) };
      if (mine.valCurve.val_accuracy) epoch.val_accuracy = Number(s.val_accuracy);
      for (const [key, value] of Object.entries(epoch)) mine.valCurve[key]!.push(value);
      const value = utility(this.goal, epoch.val_metric!);
      const best = Number.isFinite(value) && value >= mine.best;
      answer({ seed: Number(e.seed), epoch: Number(point.epoch), best });
      if (best) mine.best = value;
      const progress = { ...point, ...epoch };
      this.out.push({ event: { case: "progress", value: fromJson(EpochProgressSchema, progress as JsonValue, JSON_OPTS) } });
    });
    mine.scored.catch(() => {}); // awaited by seedResult; a failed score fails the seed there
  }

  /**
   * One job trains `jobSeeds`: one seed, or several together (python/stack.py Stack). Each
   * seed's epochs are scored in order as they arrive, and its result when the job ends. The
   * reason they must train apart, when a model has no batched form.
   */
  private async trainJob(jobSeeds: number[]): Promise<SeedResult[] | { apart: string }> {
    const { plan } = this;
    const split = await this.prepared;
    // Accuracy is a classifier's alone; val_metric is the request's metric, whichever it is.
    const seedsOf = new Map<number, SeedInJob>(
      jobSeeds.map((seed) => [seed, { scored: Promise.resolve(), best: -Infinity, valCurve: { val_loss: [], val_metric: [], ...(learningOf(this.goal.task).classes && { val_accuracy: [] }) }, end: undefined }]),
    );
    const onEvent = (e: WorkerEvent, answer: (v: EpochVerdict) => void) => {
      if (e.kind !== "epoch" && e.kind !== "seed_result") return;
      // A seed the job was not given is the model writing events of its own: ignored.
      const mine = seedsOf.get(Number(e.seed));
      if (!mine) return;
      if (e.kind === "seed_result") mine.end = e;
      else this.scoreEpoch(mine, e, answer);
    };
    const job = { ...plan.job, dataset_id: split.dataset_id, split_id: split.split_id, seed: jobSeeds[0], together: jobSeeds.length, threads: this.threads };
    let trainS: number | undefined;
    const makeSpec = () => {
      trainS = this.timeBox();
      return { ...job, ...(trainS !== undefined && { recipe: { ...job.recipe, train_seconds: trainS } }), limits: this.startSeed() };
    };
    const end = await this.runner.pool.run("train", makeSpec, onEvent, this.abort.signal, { labels: split.labels, ...this.filesOf(jobSeeds) }, this.req.seedsAtOnce);
    if (end.kind === "apart") return { apart: end.reason };
    if (end.kind !== "result") throw failureOf(end);
    if (jobSeeds.length === 1) seedsOf.get(jobSeeds[0]!)!.end = end;
    return Promise.all(jobSeeds.map((seed) => this.seedResult(seed, seedsOf.get(seed)!, jobSeeds, trainS)));
  }

  /** A seed's result once its job ended: its last predictions scored on validation (and test), its curves, the counts. */
  private async seedResult(seed: number, mine: SeedInJob, jobSeeds: number[], trainS: number | undefined): Promise<SeedResult> {
    const { end: seedEnd, scored, valCurve } = mine;
    const planned = this.plan.job.recipe.train_seconds;
    if (seedEnd === undefined) throw new ResearchError("crash", `the job of seeds ${jobSeeds.join(", ")} ended without seed ${seed}'s result`);
    if (trainS !== undefined) {
      this.overheadS = Math.max(this.overheadS, Number(seedEnd.seconds) - trainS);
      if (trainS < planned) this.log.info({ seed, train_seconds: trainS, planned }, "seed started late: trains less to end by the deadline");
    }
    await scored;
    const { val_predictions: val, test_predictions: test, ...rest } = seedEnd;
    const [v, t] = await Promise.all([this.score("val", [val], true), test ? this.score("test", [test], true) : undefined]);
    const curve = { ...(rest.learning_curve as Record<string, number[]>), ...valCurve };
    const scoredResult = {
      ...rest,
      seeds_together: jobSeeds.length,
      metrics: { ...(rest.metrics as Record<string, number>), ...(v.metrics as object), ...(t?.metrics as object | undefined) },
      // A regression has no classes.
      ...(v.per_class !== undefined && { per_class: v.per_class, confusion_matrix: v.confusion_matrix, val_correct: v.correct }),
      val_examples: v.examples,
      test_examples: t?.examples ?? 0,
      learning_curve: curve,
    };
    const result = fromJson(SeedResultSchema, scoredResult as JsonValue, JSON_OPTS);
    const valMetric = result.metrics[this.goal.key] ?? 0;
    this.out.push({ event: { case: "seedFinished", value: { seed, valAccuracy: result.metrics.val_accuracy ?? 0, valMetric, seconds: result.seconds } } });
    this.seedInfo ??= seedEnd;
    this.predictions.set(seed, { val, test });
    return result;
  }

  /**
   * Seeds apart: a job each, side by side on free slots. Together: jobs of up to maxTogether
   * seeds, and a job each for seeds whose model vmap cannot run (said in the result).
   */
  private async runSeeds(): Promise<SeedResult[]> {
    const { req, seeds, plan, runner } = this;
    const modelKey = JSON.stringify([plan.job.source, plan.job.class_name, plan.job.init_kwargs]);
    // A one-seed job never answers apart (only seeds together can: stack.py Stack.of).
    const apart = (list: number[]) => Promise.all(list.map((s) => this.trainJob([s]) as Promise<SeedResult[]>)).then((r) => r.flat());
    // Loaded weights (the test confirmation) train nothing: one seed a job.
    const groupable = runner.together() && !req.weightsOf && seeds.length > 1;
    const known = runner.apartReason(modelKey);
    if (!groupable || known !== undefined) {
      this.apartBecause = (groupable && known) || "";
      return apart(seeds);
    }
    const jobs = Array.from({ length: Math.ceil(seeds.length / DEFAULTS.maxTogether) }, (_, i) => seeds.slice(i * DEFAULTS.maxTogether, (i + 1) * DEFAULTS.maxTogether));
    const results = await Promise.all(
      jobs.map(async (jobSeeds) => {
        // Seeds together hold one slot's share of the memory: out of it, they train apart.
        const got = await this.trainJob(jobSeeds).catch((err: unknown) => {
          const f = ResearchError.from(err);
          if (f.label !== "oom" || this.abort.signal.aborted) throw err;
          return { apart: `the ${jobSeeds.length} seeds ran out of memory together: ${f.message}` };
        });
        if (Array.isArray(got)) return got;
        this.apartBecause = got.apart;
        runner.rememberApart(modelKey, got.apart);
        this.log.info({ seeds: jobSeeds, reason: got.apart }, "seeds train apart");
        return apart(jobSeeds);
      }),
    );
    return results.flat();
  }
}
