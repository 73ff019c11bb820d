/**
 * Exactly-once evaluation under at-least-once delivery. JetStream redelivers a message whose
 * consumer did not acknowledge it in time, and a publisher may send twice; an evaluation request
 * that carries an idempotency key therefore joins the flight of that key when there is one: while
 * it runs, the caller gets the events so far and then the rest; once it has ended with a result or
 * a failure, the stored events, for `keepMs`. Nothing trains twice. The evaluation is cancelled
 * only when every caller has gone, and a flight cancelled that way is forgotten at once, so a
 * later request (the restarted analyst's) starts it anew.
 */
import { AsyncQueue } from "../core/async-queue.js";

interface Flight<T> {
  events: T[];
  /** Ended with its last event (the stream closed on its own). */
  ended: boolean;
  error?: unknown;
  /** Callers following it now, each woken when an event arrives. */
  callers: Set<() => void>;
  abort: AbortController;
}

export class Flights<T> {
  private readonly flights = new Map<string, Flight<T>>();
  /** Evaluations started, and requests that joined one instead: what the tests and the logs count. */
  readonly counts = { started: 0, joined: 0 };

  constructor(private readonly keepMs = 10 * 60_000) {}

  /**
   * The events of the evaluation under `key`, started with `start` when none is running or kept.
   * `start` may throw before streaming (a bad request): then nothing is kept. `signal` is this
   * caller's: its abort detaches this caller alone.
   */
  join(key: string, start: (signal: AbortSignal) => AsyncIterable<T>, signal?: AbortSignal): AsyncIterable<T> {
    let flight = this.flights.get(key);
    if (flight) this.counts.joined++;
    else {
      const abort = new AbortController();
      const stream = start(abort.signal);
      flight = { events: [], ended: false, callers: new Set(), abort };
      this.flights.set(key, flight);
      this.counts.started++;
      void this.pump(key, flight, stream);
    }
    return this.follow(key, flight, signal);
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
    // Cancelled because every caller left: no answer to keep (leave() forgot it already).
    if (!f.abort.signal.aborted) setTimeout(() => this.flights.get(key) === f && this.flights.delete(key), this.keepMs).unref();
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
      // The last caller gone: nobody waits for this evaluation any more.
      if (f.callers.size === 0 && !f.ended) {
        f.abort.abort();
        this.flights.delete(key);
      }
    };
    f.callers.add(wake);
    if (signal?.aborted) leave();
    else signal?.addEventListener("abort", leave, { once: true });
    wake();
    return out;
  }
}
