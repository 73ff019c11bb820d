/**
 * One evaluation per idempotency key (gpu-runner/flights.ts): duplicates join the one running or
 * get its stored events; it ends early only when cancelled, or when every caller has gone and
 * none came back within the grace, and is then forgotten.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Flights, FlightStore, STORED_FOR_MS } from "../../gpu-runner/flights.js";

/** An evaluation that yields `n` events `gapMs` apart, counting its starts and seeing its cancellation. */
function source(n: number, gapMs = 20, fail?: Error) {
  const seen = { starts: 0, cancelled: 0 };
  const start = (signal: AbortSignal) => {
    seen.starts++;
    signal.addEventListener("abort", () => seen.cancelled++);
    return (async function* () {
      for (let i = 0; i < n; i++) {
        if (signal.aborted) return;
        await new Promise((r) => setTimeout(r, gapMs));
        yield `e${i}`;
      }
      if (fail) throw fail;
    })();
  };
  return { seen, start };
}

async function all(events: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe("flights", () => {
  it("shares one evaluation between a request and its duplicates, late ones getting the events so far", async () => {
    const flights = new Flights<string>();
    const { seen, start } = source(5);
    const first = all(flights.join("r/t1", start));
    await new Promise((r) => setTimeout(r, 50));
    const late = all(flights.join("r/t1", start));
    expect(await first).toEqual(["e0", "e1", "e2", "e3", "e4"]);
    expect(await late).toEqual(["e0", "e1", "e2", "e3", "e4"]);
    // Ended: a redelivery gets the stored events at once, nothing started again.
    const t0 = Date.now();
    expect(await all(flights.join("r/t1", start))).toEqual(["e0", "e1", "e2", "e3", "e4"]);
    expect(Date.now() - t0).toBeLessThan(15);
    expect(seen.starts).toBe(1);
    expect(flights.counts).toEqual({ started: 1, joined: 2 });
    // Another key is another evaluation.
    await all(flights.join("r/t2", start));
    expect(seen.starts).toBe(2);
  });

  it("goes on while one caller is left; cancelled, it ends as the last one leaves, and is forgotten", async () => {
    const flights = new Flights<string>();
    const { seen, start } = source(6);
    const gone = new AbortController();
    const leaving = all(flights.join("r/t1", start, gone.signal));
    const staying = all(flights.join("r/t1", start));
    setTimeout(() => gone.abort(), 50);
    expect((await leaving).length).toBeLessThan(6);
    expect(await staying).toEqual(["e0", "e1", "e2", "e3", "e4", "e5"]);
    expect(seen.cancelled).toBe(0);

    const only = new AbortController();
    const cut = all(flights.join("r/t3", start, only.signal));
    setTimeout(() => (expect(flights.cancel("r/t3")).toBe(true), only.abort()), 30);
    await cut;
    expect(seen.cancelled).toBe(1);
    // Forgotten: a later request trains anew; a key that is not running has nothing to cancel.
    expect(await all(flights.join("r/t3", start))).toHaveLength(6);
    expect(seen.starts).toBe(3);
    expect(flights.cancel("r/t3")).toBe(false);
  });

  it("runs on for its grace when its only caller dies, for the redelivery to join; then, with nobody back, ends", async () => {
    const flights = new Flights<string>({ keepMs: 60_000, orphanGraceMs: 100 });
    const { seen, start } = source(8, 25);
    const crashed = new AbortController();
    const first = all(flights.join("r/t1", start, crashed.signal));
    setTimeout(() => crashed.abort(), 40);
    await first;
    // The restarted caller, within the grace: the whole evaluation, from its first event, trained once.
    await new Promise((r) => setTimeout(r, 50));
    expect(await all(flights.join("r/t1", start))).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"]);
    expect(seen).toEqual({ starts: 1, cancelled: 0 });

    // Nobody back within the grace: cancelled and forgotten.
    const lost = new AbortController();
    const alone = all(flights.join("r/t2", start, lost.signal));
    setTimeout(() => lost.abort(), 40);
    await alone;
    await new Promise((r) => setTimeout(r, 150));
    expect(seen).toEqual({ starts: 2, cancelled: 1 });
    // Cancelled after its caller died: ended at once, no grace.
    const died = new AbortController();
    const third = all(flights.join("r/t4", start, died.signal));
    setTimeout(() => died.abort(), 40);
    await third;
    expect(flights.cancel("r/t4")).toBe(true);
    expect(seen.cancelled).toBe(2);
  });

  it("gives every caller the failure, and keeps no flight for a request refused before it started", async () => {
    const flights = new Flights<string>();
    const { start } = source(2, 10, new Error("out of memory"));
    const a = all(flights.join("r/t1", start));
    const b = all(flights.join("r/t1", start));
    await expect(a).rejects.toThrow("out of memory");
    await expect(b).rejects.toThrow("out of memory");
    let tries = 0;
    const refuse = () => {
      tries++;
      throw new Error("invalid evaluation request");
    };
    expect(() => flights.join("r/t9", refuse)).toThrow("invalid evaluation request");
    expect(() => flights.join("r/t9", refuse)).toThrow("invalid evaluation request");
    expect(tries).toBe(2);
  });

  it("keeps an ended answer on disk for the next process on the same directory; a failure worth retrying is kept nowhere", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flights-"));
    try {
      const codec = { encode: (events: string[]) => JSON.stringify(events), decode: (text: string) => JSON.parse(text) as string[] };
      // What a runner killed mid-write leaves, and an answer older than a day: both gone at the next start.
      writeFileSync(join(dir, "half.json.tmp"), "[");
      writeFileSync(join(dir, "old.json"), "[]");
      const dayAgo = (Date.now() - STORED_FOR_MS - 60_000) / 1000;
      utimesSync(join(dir, "old.json"), dayAgo, dayAgo);
      const settled = (events: string[]) => events.at(-1) !== "retry";
      const before = new Flights<string>({ settled, store: new FlightStore(dir, codec) });
      expect(readdirSync(dir)).toEqual([]);
      const { seen, start } = source(3, 5);
      expect(await all(before.join("r/t1", start))).toEqual(["e0", "e1", "e2"]);

      // The runner restarted: the redelivered request gets the answer, and nothing trains again.
      const after = new Flights<string>({ settled, store: new FlightStore(dir, codec) });
      expect(await all(after.join("r/t1", start))).toEqual(["e0", "e1", "e2"]);
      expect(seen.starts).toBe(1);
      expect(after.counts).toEqual({ started: 0, joined: 1 });

      // An answer that says "try again" is not kept, in memory or on disk: the next request trains.
      let runs = 0;
      const flaky = () => (runs++, (async function* () { yield "retry"; })());
      expect(await all(after.join("r/t2", flaky))).toEqual(["retry"]);
      expect(await all(after.join("r/t2", flaky))).toEqual(["retry"]);
      expect(runs).toBe(2);
      expect(readdirSync(dir)).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
