/**
 * The runs a process works on, each folded once and kept current: a follower
 * per run reads its stored history once and then applies only new events, the
 * way Optuna's journal storage catches up from the last operation it read.
 * Handling a message costs one round trip to ask the server whether anything
 * newer is stored, however long the run, instead of a replay from sequence 0.
 * A restarted process rebuilds the same state from the stream.
 */
import type { Bus, RunWatch } from "../bus/index.js";
import type { Logger } from "../core/logger.js";
import { applyToRunState, emptyRunState, type RunState } from "./run-state.js";

interface Follower {
  state: RunState;
  watch: Promise<RunWatch>;
  lastUsedMs: number;
}

export interface RunStatesOptions {
  /** Followers kept at most; the least recently used one is stopped first. */
  maxRuns?: number;
  /** A follower unused this long is stopped (its run is likely over). */
  idleMs?: number;
}

export class RunStates {
  private readonly followers = new Map<string, Follower>();
  private readonly maxRuns: number;
  private readonly idleMs: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly log: Logger,
    opts: RunStatesOptions = {},
  ) {
    this.maxRuns = opts.maxRuns ?? 32;
    this.idleMs = opts.idleMs ?? 10 * 60_000;
    this.sweeper = setInterval(() => void this.evictIdle(), Math.min(this.idleMs, 60_000));
    this.sweeper.unref();
  }

  /**
   * The run's state including every event stored before the call, and its
   * events up to stream sequence `atLeastSeq` (the event a handler holds). The
   * object is shared and keeps changing as events arrive: read it, don't write it.
   */
  async get(runId: string, atLeastSeq = 0): Promise<RunState> {
    try {
      return await this.current(runId, atLeastSeq);
    } catch (err) {
      // An ordered consumer lives on one NATS node; with that node gone it stays "offline".
      // A new follower reads the run again from the (replicated) stream.
      this.log.warn({ err, run_id: runId }, "the run's follower failed; reading the run again");
      await this.drop(runId);
      return await this.current(runId, atLeastSeq);
    }
  }

  private async current(runId: string, atLeastSeq: number): Promise<RunState> {
    const f = this.follower(runId);
    f.lastUsedMs = Date.now();
    const watch = await f.watch;
    await watch.sync(atLeastSeq);
    return f.state;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.followers.keys()];
    await Promise.all(all.map((id) => this.drop(id)));
  }

  private follower(runId: string): Follower {
    let f = this.followers.get(runId);
    if (f) return f;
    const state = emptyRunState(runId);
    const watch = this.bus.watch(runId, (e) => void applyToRunState(state, e));
    f = { state, watch, lastUsedMs: Date.now() };
    this.followers.set(runId, f);
    // A failed start is not kept: the next message tries again.
    watch.catch((err: unknown) => {
      this.log.warn({ err, run_id: runId }, "following the run failed");
      if (this.followers.get(runId) === f) this.followers.delete(runId);
    });
    if (this.followers.size > this.maxRuns) {
      const oldest = [...this.followers.entries()].sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs)[0]![0];
      void this.drop(oldest);
    }
    return f;
  }

  private async drop(runId: string): Promise<void> {
    const f = this.followers.get(runId);
    if (!f) return;
    this.followers.delete(runId);
    await f.watch.then((w) => w.stop()).catch(() => undefined);
  }

  private async evictIdle(): Promise<void> {
    const cutoff = Date.now() - this.idleMs;
    for (const [id, f] of this.followers) if (f.lastUsedMs < cutoff) await this.drop(id);
  }
}
