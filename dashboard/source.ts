/**
 * The runs the dashboard shows, each folded once and kept current: the
 * workspace's lineage (read-only) at start, and, while a swarm runs for the
 * workspace, its bus: every run's stream from the start, then live events and
 * per-epoch progress. A run folds from one source in order: a run present in
 * the stream is folded from the stream (replacing the stored fold once the
 * stream has been read to its end), and the store serves only runs the stream
 * lacks. When no swarm is up the source asks again every few seconds, and it
 * lets go of a bus that stays disconnected, so a swarm started (or restarted
 * elsewhere) later is followed too.
 */
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { progressSubject, type Bus, type RunWatch } from "../bus/index.js";
import type { Logger } from "../core/logger.js";
import { ACCURACY, type Objective } from "../core/objective.js";
import { EventSchema, type Event } from "../proto/gen/research/v1/events_pb.js";
import type { EpochProgress } from "../proto/gen/research/v1/runner_pb.js";
import { lineageEmbedder } from "../lineage-store/embedder.js";
import { LineageStore } from "../lineage-store/store.js";
import { emptyRunState } from "../swarm/run-state.js";
import type { LiveMessage } from "./api.js";
import { applyToView, emptyView, epochJson, type RunView } from "./views.js";

export interface SourceOptions {
  workspace: string;
  logger: Logger;
  /**
   * The bus of the swarm running for the workspace now, or undefined when
   * none is (the CLI reads `swarm.json` and the workspace's secrets). Absent:
   * the lineage only.
   */
  connect?: () => Promise<Bus | undefined>;
  /** How often to look for a swarm when none is followed. Default 3 s. */
  retryMs?: number;
  /** How long a bus may stay disconnected before it is let go. Default 10 s. */
  lostAfterMs?: number;
}

/** A run's fold and what makes it current: the ids of the events applied to it. */
interface Entry {
  view: RunView;
  seen: Set<string>;
}

/** The bus followed now and the runs folded from it. */
interface Following {
  bus: Bus;
  runs: Map<string, Entry>;
  /** Set once the stream's history has been read: the bus's folds are what the dashboard shows. */
  caughtUp: boolean;
  /** The stream's reader; the progress subscription ends with the connection. */
  watch?: RunWatch;
}

export class DashboardSource {
  /** What the API shows, by run id. */
  private readonly shown = new Map<string, Entry>();
  /** Latest progress per run, trial and seed; shared by every fold of the run. */
  private readonly progress = new Map<string, Map<string, Map<number, EpochProgress>>>();
  private readonly listeners = new Set<(m: LiveMessage) => void>();
  private following: Following | undefined;
  /** Opened once, on first use; concurrent callers share the opening. */
  private store: Promise<LineageStore> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;
  private readonly lineageDir: string;

  private constructor(private readonly opts: SourceOptions) {
    this.log = opts.logger;
    this.lineageDir = join(resolve(opts.workspace), "lineage");
  }

  /** Reads the stored runs, then starts following the swarm when one is up (and looking for one when not). */
  static async open(opts: SourceOptions): Promise<DashboardSource> {
    const source = new DashboardSource(opts);
    await source.readStore();
    if (opts.connect) await source.tryConnect();
    return source;
  }

  runs(): RunView[] {
    return [...this.shown.values()].map((e) => e.view).sort((a, b) => b.state.startedAtMs - a.state.startedAtMs);
  }

  run(runId: string): RunView | undefined {
    return this.shown.get(runId)?.view;
  }

  /** The run's objective; a run not folded yet has an empty fold's. */
  objectiveOf(runId: string): Objective {
    return (this.shown.get(runId) ?? this.following?.runs.get(runId))?.view.state.objective ?? ACCURACY;
  }

  /** The bus followed now, to publish on and to ask the lineage store over. */
  bus(): Bus | undefined {
    return this.following?.bus;
  }

  /**
   * The workspace's lineage, opened read-only on first use once its writer has created it: a
   * new workspace has none until a swarm writes it, and a swarm starting beside this dashboard
   * may be creating it now (its runs reach the dashboard through the bus meanwhile).
   */
  async lineage(): Promise<LineageStore | undefined> {
    // Asked again after the await: a concurrent caller may have opened it meanwhile.
    if (!this.store && (await LineageStore.written(this.lineageDir)) && !this.store) {
      const dir = this.lineageDir;
      this.store = lineageEmbedder(dir, {}, this.log).then((embedder) => LineageStore.open(dir, { readOnly: true, embedder, logger: this.log }));
      // A failed opening is tried again on the next use.
      this.store.catch(() => (this.store = undefined));
    }
    return this.store;
  }

  /** Called on every event applied to a shown run and on every progress; returns the unsubscribe. */
  listen(listener: (m: LiveMessage) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const f = this.following;
    this.following = undefined;
    if (f) await release(f);
    const store = this.store;
    this.store = undefined;
    await (await store?.catch(() => undefined))?.close();
  }

  private notify(m: LiveMessage): void {
    for (const l of this.listeners) {
      try {
        l(m);
      } catch (err) {
        this.log.warn({ err }, "a live listener failed");
      }
    }
  }

  private newEntry(runId: string, live: boolean): Entry {
    const view = emptyView(emptyRunState(runId));
    view.live = live;
    view.progress = this.progressOf(runId);
    return { view, seen: new Set() };
  }

  private progressOf(runId: string): Map<string, Map<number, EpochProgress>> {
    let p = this.progress.get(runId);
    if (!p) this.progress.set(runId, (p = new Map()));
    return p;
  }

  /** Applies `e` once (by event id) to `entry`; false when it was applied before. */
  private apply(entry: Entry, e: Event): boolean {
    if (e.eventId) {
      if (entry.seen.has(e.eventId)) return false;
      entry.seen.add(e.eventId);
    }
    applyToView(entry.view, e);
    return true;
  }

  /** Every run of the lineage, each folded from its stored events (before any bus is followed). */
  private async readStore(): Promise<void> {
    const store = await this.lineage();
    if (!store) return;
    for (const row of await store.listRuns()) {
      const entry = this.newEntry(row.run_id, false);
      for (const ev of await store.eventsOf(row.run_id)) this.apply(entry, fromBinary(EventSchema, ev.payload));
      this.shown.set(row.run_id, entry);
    }
    this.log.info({ runs: this.shown.size }, "read the workspace's lineage");
  }

  private schedule(): void {
    if (this.closed || !this.opts.connect) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tryConnect(), this.opts.retryMs ?? 3_000);
    this.timer.unref();
  }

  private async tryConnect(): Promise<void> {
    let bus: Bus | undefined;
    try {
      bus = await this.opts.connect!();
    } catch (err) {
      this.log.debug({ err }, "no swarm to follow yet");
    }
    if (this.closed) return void (await bus?.close());
    if (!bus) return this.schedule();
    await this.follow(bus);
  }

  private async follow(bus: Bus): Promise<void> {
    const f: Following = { bus, runs: new Map(), caughtUp: false };
    this.following = f;
    this.watchConnection(f);
    try {
      f.watch = await bus.watch("*", (e) => this.onStreamEvent(f, e));
    } catch (err) {
      this.log.warn({ err }, "cannot read the swarm's stream; trying again");
      return this.letGo(f);
    }
    bus.subscribe(progressSubject("*"), (e) => this.onProgress(e));
    this.log.info("following the swarm's bus");
    void f.watch.caughtUp.then(() => {
      if (this.following !== f) return;
      f.caughtUp = true;
      for (const [runId, entry] of f.runs) {
        this.shown.set(runId, entry);
        this.notify({ type: "change", run_id: runId, trial_id: "", kind: "caught_up" });
      }
    });
  }

  private onStreamEvent(f: Following, e: Event): void {
    if (this.following !== f) return;
    let entry = f.runs.get(e.runId);
    if (!entry) {
      entry = this.newEntry(e.runId, true);
      f.runs.set(e.runId, entry);
      if (f.caughtUp) this.shown.set(e.runId, entry);
    }
    if (this.apply(entry, e) && f.caughtUp) this.notify({ type: "change", run_id: e.runId, trial_id: e.trialId, kind: e.body.case ?? "" });
  }

  private onProgress(e: Event): void {
    const p = e.body.case === "trialProgress" ? e.body.value.progress : undefined;
    if (!p) return;
    // A late epoch of a trial already evaluated would bring back a bar that ended.
    if (this.shown.get(e.runId)?.view.state.trials.get(e.trialId)?.evaluated) return;
    const trials = this.progressOf(e.runId);
    let seeds = trials.get(e.trialId);
    if (!seeds) trials.set(e.trialId, (seeds = new Map()));
    seeds.set(p.seed, p);
    this.notify({ type: "progress", run_id: e.runId, trial_id: e.trialId, seed: p.seed, ...epochJson(this.objectiveOf(e.runId), p), train_accuracy: p.trainAccuracy });
  }

  /** A bus that stays disconnected is let go: the swarm stopped, or came back elsewhere. */
  private watchConnection(f: Following): void {
    const lostAfter = this.opts.lostAfterMs ?? 10_000;
    let lost: NodeJS.Timeout | undefined;
    void (async () => {
      for await (const s of f.bus.nc.status()) {
        if (s.type === "disconnect") {
          lost ??= setTimeout(() => void this.letGo(f), lostAfter);
          lost.unref();
        } else if (s.type === "reconnect") {
          clearTimeout(lost);
          lost = undefined;
        }
      }
      clearTimeout(lost);
    })();
  }

  /** Stops following `f`: its runs stay as last seen, no longer live, and the source looks for a swarm again. */
  private async letGo(f: Following): Promise<void> {
    if (this.following !== f) return;
    this.following = undefined;
    this.log.warn("lost the swarm's bus; the runs stay as last seen");
    await release(f);
    for (const [runId, entry] of this.shown) {
      if (!entry.view.live) continue;
      entry.view.live = false;
      this.notify({ type: "change", run_id: runId, trial_id: "", kind: "bus_lost" });
    }
    for (const trials of this.progress.values()) trials.clear();
    this.schedule();
  }
}

/**
 * Stops the stream's reader first, so it does not reopen on a closed
 * connection, then closes the connection outright, which ends the progress
 * subscription: a drain (Bus.close) waits forever for a server that is gone.
 */
async function release(f: Following): Promise<void> {
  const stopping = f.watch?.stop();
  await f.bus.nc.close().catch(() => undefined);
  await stopping;
}
