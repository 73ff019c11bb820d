/**
 * Trained weights the runner keeps, so that a run's one-time test
 * confirmation evaluates its best trial's weights instead of training the
 * model again (on a small machine that retraining was the price of the
 * longest trial, which then could never start late in a run).
 *
 * Per run only the best few trials stay on disk, ranked by the run's own rule
 * for "best" (core/ranking.ts), so the judge's best is among them unless the
 * judge rejected several trials that outrank it (the runner does not see
 * verdicts); a trial whose weights are gone gets an invalid_config answer, on
 * which the judge trains it again when the budget allows. Ranking by the
 * validation mean instead dropped a digits run's three-seed best behind
 * one-seed probes with higher means, and its test accuracy went unmeasured.
 * Weights live as long as the runner's scratch directory, or in its state
 * directory across restarts until their run is a day untouched; the newest runs
 * are kept. The same files leave the runner over its FetchWeights rpc, so a
 * run's folder gets its best model.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { pathComponent, pruneOld, STORED_FOR_MS } from "./flights.js";
import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { outranks, type Standing } from "../core/ranking.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ResearchError } from "../core/failure.js";
import type { WeightsChunkSchema } from "../proto/gen/research/v1/runner_pb.js";

/** Trials kept per run. */
export const KEPT_PER_RUN = 5;
/** Runs kept; a runner serving more at once drops the oldest run's weights. */
const KEPT_RUNS = 16;
/** Bytes per streamed chunk: a quarter of gRPC's default 4 MB message limit, which foreign clients keep. */
export const CHUNK_BYTES = 1 << 20;

export class WeightStore {
  /** run -> trial -> its standing, in the order runs first kept something. */
  private readonly runs = new Map<string, Map<string, Standing>>();

  constructor(private readonly root: string) {
    // A runner's state directory keeps them across restarts: a run untouched for a day is over.
    if (existsSync(root)) pruneOld(root, STORED_FOR_MS);
  }

  private dir(runId: string, trialId: string): string {
    return join(this.root, pathComponent(runId), pathComponent(trialId));
  }

  /** Where seed `seed` of a trial's weights are written (the worker moves them there) and read from. */
  file(runId: string, trialId: string, seed: number): string {
    const dir = this.dir(runId, trialId);
    mkdirSync(dir, { recursive: true });
    return join(dir, `seed-${seed}.pt`);
  }

  has(runId: string, trialId: string, seed: number): boolean {
    return existsSync(join(this.dir(runId, trialId), `seed-${seed}.pt`));
  }

  /** The seeds whose weights are kept for a trial, in order; none when nothing is. */
  keptSeeds(runId: string, trialId: string): number[] {
    const dir = this.dir(runId, trialId);
    return (existsSync(dir) ? readdirSync(dir) : [])
      .map((name) => /^seed-(\d+)\.pt$/.exec(name)?.[1])
      .filter((seed): seed is string => seed !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  /**
   * The kept file each of `count` seeds starts from when a request continues `trialId`'s
   * training (EvaluateRequest.init_weights): the i-th kept seed for seed i. invalid_config when
   * fewer are kept: two seeds from one seed's weights would not be independent, and their
   * interval would claim more than they know.
   */
  startFrom(runId: string, trialId: string, count: number): string[] {
    const kept = this.keptSeeds(runId, trialId);
    if (!kept.length) {
      throw new ResearchError("invalid_config", `no weights kept for trial ${trialId} of run ${runId} to start from (a runner keeps a run's best ${KEPT_PER_RUN} trials by the run's rule for best, for a day after the run last used them)`);
    }
    if (kept.length < count) {
      throw new ResearchError("invalid_config", `trial ${trialId} of run ${runId} has ${kept.length} seeds' weights kept, fewer than the ${count} seeds asked to start from them (each seed starts from its own)`);
    }
    return kept.slice(0, count).map((seed) => join(this.dir(runId, trialId), `seed-${seed}.pt`));
  }

  /**
   * A trial's kept weights, seed by seed in CHUNK_BYTES pieces, every seed
   * at least one. invalid_config when none are kept.
   */
  async *chunks(runId: string, trialId: string): AsyncGenerator<MessageInitShape<typeof WeightsChunkSchema>> {
    const dir = this.dir(runId, trialId);
    const seeds = this.keptSeeds(runId, trialId);
    // All opened before the first byte goes out: an open file outlives its name, so a trial that
    // another's settle drops meanwhile still streams whole.
    const files = (await Promise.all(seeds.map((seed) => open(join(dir, `seed-${seed}.pt`)).then((handle) => ({ seed, handle }), () => undefined))))
      .filter((f): f is { seed: number; handle: FileHandle } => f !== undefined);
    try {
      if (!files.length) {
        throw new ResearchError("invalid_config", `no weights kept for trial ${trialId} of run ${runId} (the runner keeps its run's best ${KEPT_PER_RUN} trials by the run's rule for best, while it runs)`);
      }
      for (const { seed, handle } of files) {
        const size = (await handle.stat()).size;
        let sent = 0;
        do {
          // A fresh buffer per chunk: the stream may hold a chunk until the client takes it.
          const want = Math.min(CHUNK_BYTES, size - sent);
          const { bytesRead, buffer } = await handle.read(Buffer.alloc(want), 0, want, sent);
          sent += bytesRead;
          yield { seed, size: BigInt(size), data: buffer.subarray(0, bytesRead) };
          if (bytesRead === 0) break;
        } while (sent < size);
      }
    } finally {
      await Promise.all(files.map((f) => f.handle.close()));
    }
  }

  /**
   * After a trial's evaluation: kept when it ranks among its run's best
   * KEPT_PER_RUN, dropped when it does not or when it failed (standing
   * undefined), along with whichever trial it displaced.
   */
  settle(runId: string, trialId: string, standing: Standing | undefined): void {
    // A failed or cancelled evaluation of a trial that an earlier one kept (the same trial
    // evaluated twice, say a redelivered message) leaves those weights: dropping them took
    // a run's best trial's test confirmation with it.
    if (standing === undefined) return void (this.runs.get(runId)?.has(trialId) || this.drop(runId, trialId));
    let trials = this.runs.get(runId);
    if (!trials) {
      this.runs.set(runId, (trials = new Map()));
      for (const old of [...this.runs.keys()].slice(0, Math.max(0, this.runs.size - KEPT_RUNS))) {
        this.runs.delete(old);
        rmSync(join(this.root, pathComponent(old)), { recursive: true, force: true });
      }
    }
    trials.set(trialId, standing);
    if (trials.size <= KEPT_PER_RUN) return;
    let worst: [string, Standing] | undefined;
    for (const entry of trials) if (!worst || outranks(worst[1], entry[1])) worst = entry;
    this.drop(runId, worst![0]);
  }

  private drop(runId: string, trialId: string): void {
    this.runs.get(runId)?.delete(trialId);
    rmSync(this.dir(runId, trialId), { recursive: true, force: true });
  }
}
