/**
 * Exactly-once evaluation under at-least-once delivery. JetStream redelivers a message whose
 * consumer did not acknowledge it in time, and a publisher may send twice; an evaluation request
 * that carries an idempotency key therefore joins the flight of that key when there is one: while
 * it runs, the caller gets the events so far and then the rest; once it has ended with an answer
 * worth keeping (a result, or a failure that would come again), the stored events, for `keepMs`
 * in memory and, with a store, on disk across restarts of the runner. Nothing trains twice.
 *
 * A flight ends early only on purpose: `cancel(key)` (the analyst pruned or stopped it) ends it
 * when its last caller has gone, and forgets it. A caller that just goes away (its process died)
 * leaves it running for `orphanGraceMs`, longer than the agents' acknowledgement deadline, so the
 * restarted analyst's redelivered request joins it instead of training it again; with nobody
 * back by then it is cancelled and forgotten.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AsyncQueue } from "../core/async-queue.js";

/**
 * How long an evaluation whose callers all went away without cancelling it runs on: past the
 * analyst's acknowledgement deadline (60 s, agents/analyst/main.ts), when JetStream hands its message
 * to the restarted analyst, with room for that process to start.
 */
export const ORPHAN_GRACE_MS = 180_000;

interface Flight<T> {
  events: T[];
  /** Ended with its last event (the stream closed on its own). */
  ended: boolean;
  error?: unknown;
  /** Callers following it now, each woken when an event arrives. */
  callers: Set<() => void>;
  abort: AbortController;
  /** Asked to end (Cancel): ends as its last caller leaves, with no grace. */
  cancelled: boolean;
  /** Running with no caller: cancelled when this fires. */
  orphaned?: NodeJS.Timeout;
}

/** A day: longer than any run whose messages could still be redelivered (the runner leases' TTL). */
export const STORED_FOR_MS = 24 * 3600_000;

/** Ids arrive over the wire: a path component that cannot escape its directory, whatever they hold. */
export const pathComponent = (id: string) => Buffer.from(id).toString("base64url") || "_";

/** Removes what in `dir` was last written more than `maxAgeMs` ago (and what `stale` names), as a store opens. */
export function pruneOld(dir: string, maxAgeMs: number, stale: (name: string) => boolean = () => false): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (stale(name) || Date.now() - statSync(path).mtimeMs > maxAgeMs) rmSync(path, { recursive: true, force: true });
  }
}

/**
 * Ended flights' answers on disk, one file per key, so that a runner restarted on the same
 * directory answers a redelivered request as the one before it would have: with the stored
 * events, not with a second training. Files older than `maxAgeMs` are removed as it opens.
 */
export class FlightStore<T> {
  constructor(
    private readonly dir: string,
    private readonly codec: { encode(events: T[]): string; decode(text: string): T[] },
    private readonly maxAgeMs = STORED_FOR_MS,
  ) {
    mkdirSync(dir, { recursive: true });
    pruneOld(dir, maxAgeMs, (name) => name.endsWith(".tmp"));
  }

  private file(key: string): string {
    return join(this.dir, `${pathComponent(key)}.json`);
  }

  save(key: string, events: T[]): void {
    const path = this.file(key);
    // Whole or not at all: a runner killed mid-write leaves a .tmp, removed at the next start.
    writeFileSync(`${path}.tmp`, this.codec.encode(events));
    renameSync(`${path}.tmp`, path);
  }

  load(key: string): T[] | undefined {
    const path = this.file(key);
    try {
      if (Date.now() - statSync(path).mtimeMs > this.maxAgeMs) return undefined;
      return this.codec.decode(readFileSync(path, "utf8"));
    } catch {
      // None stored, or unreadable: the request trains.
      return undefined;
    }
  }
}

export interface FlightsOptions<T> {
  keepMs?: number;
  orphanGraceMs?: number;
  /** Whether an ended flight's events are an answer to keep; otherwise it is forgotten as it ends (a failure worth retrying). */
  settled?: (events: T[]) => boolean;
  store?: FlightStore<T>;
}

export class Flights<T> {
  private readonly flights = new Map<string, Flight<T>>();
  /** Evaluations started, and requests that joined one instead: what the tests and the logs count. */
  readonly counts = { started: 0, joined: 0 };
  private readonly keepMs: number;
  private readonly orphanGraceMs: number;

  constructor(private readonly opts: FlightsOptions<T> = {}) {
    this.keepMs = opts.keepMs ?? 10 * 60_000;
    this.orphanGraceMs = opts.orphanGraceMs ?? ORPHAN_GRACE_MS;
  }

  /**
   * The events of the evaluation under `key`, started with `start` when none is running or kept.
   * `start` may throw before streaming (a bad request): then nothing is kept. `signal` is this
   * caller's: its abort detaches this caller alone.
   */
  join(key: string, start: (signal: AbortSignal) => AsyncIterable<T>, signal?: AbortSignal): AsyncIterable<T> {
    let flight = this.flights.get(key) ?? this.stored(key);
    if (flight) {
      this.counts.joined++;
      clearTimeout(flight.orphaned);
    } else {
      const abort = new AbortController();
      const stream = start(abort.signal);
      flight = { events: [], ended: false, callers: new Set(), abort, cancelled: false };
      this.flights.set(key, flight);
      this.counts.started++;
      void this.pump(key, flight, stream);
    }
    return this.follow(key, flight, signal);
  }

  /** Whether this process runs the evaluation of `key` or holds its answer (in memory or in the store). */
  has(key: string): boolean {
    return this.flights.has(key) || this.opts.store?.load(key) !== undefined;
  }

  /**
   * Ends the evaluation of `key` on purpose: now when no caller follows it, else as the last one
   * leaves. False when none of that key is running.
   */
  cancel(key: string): boolean {
    const f = this.flights.get(key);
    if (!f || f.ended) return false;
    f.cancelled = true;
    if (f.callers.size === 0) this.end(key, f);
    return true;
  }

  /** A flight of an earlier process of this runner that ended with an answer, from the store. */
  private stored(key: string): Flight<T> | undefined {
    const events = this.opts.store?.load(key);
    if (!events) return undefined;
    const f: Flight<T> = { events, ended: true, callers: new Set(), abort: new AbortController(), cancelled: false };
    this.flights.set(key, f);
    this.forgetLater(key, f);
    return f;
  }

  private forgetLater(key: string, f: Flight<T>): void {
    setTimeout(() => this.flights.get(key) === f && this.flights.delete(key), this.keepMs).unref();
  }

  private end(key: string, f: Flight<T>): void {
    clearTimeout(f.orphaned);
    f.abort.abort();
    if (this.flights.get(key) === f) this.flights.delete(key);
  }

  private async pump(key: string, f: Flight<T>, stream: AsyncIterable<T>): Promise<void> {
    try {
      for await (const e of stream) {
        f.events.push(e);
        for (const wake of f.callers) wake();
      }
    } catch (err) {
      f.error = err;
    }
    f.ended = true;
    for (const wake of f.callers) wake();
    clearTimeout(f.orphaned);
    // Cancelled: no answer to keep (end() forgot it already). A failure worth retrying is not
    // one either: the next request for the key trains again.
    if (f.abort.signal.aborted) return;
    const settled = f.error === undefined && (this.opts.settled?.(f.events) ?? true);
    if (!settled) {
      if (this.flights.get(key) === f) this.flights.delete(key);
      return;
    }
    this.forgetLater(key, f);
    try {
      this.opts.store?.save(key, f.events);
    } catch {
      // A full or read-only disk costs the answer across a restart, not the answer now.
    }
  }

  private follow(key: string, f: Flight<T>, signal?: AbortSignal): AsyncIterable<T> {
    const out = new AsyncQueue<T>();
    let sent = 0;
    const wake = () => {
      while (sent < f.events.length) out.push(f.events[sent++]!);
      if (f.ended) {
        f.callers.delete(wake);
        if (f.error !== undefined) out.fail(f.error);
        else out.close();
      }
    };
    const leave = () => {
      if (!f.callers.delete(wake)) return;
      out.close();
      if (f.callers.size > 0 || f.ended) return;
      // The last caller gone: ended now if it was cancelled, else after the grace unless one comes back.
      if (f.cancelled) this.end(key, f);
      else f.orphaned = setTimeout(() => f.callers.size === 0 && this.end(key, f), this.orphanGraceMs).unref();
    };
    f.callers.add(wake);
    if (signal?.aborted) leave();
    else signal?.addEventListener("abort", leave, { once: true });
    wake();
    return out;
  }
}
