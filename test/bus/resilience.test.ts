import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type Bus, type Event, type NatsServer } from "../../bus/index.js";
import { eventOf, sleep, startTestServer, testBus, waitFor, type TestServer } from "./helpers.js";

let ts: TestServer;
let bus: Bus;
const children: ChildProcess[] = [];

beforeAll(async () => {
  ts = await startTestServer();
  bus = await testBus(ts.server.url, "resilience-test");
});

afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

afterAll(async () => {
  await bus?.close();
  await ts?.dispose();
});

/** Runs a fixture under tsx; `lines` collects its stdout line by line. */
function runFixture(name: string, args: string[]): { child: ChildProcess; lines: string[]; exit: Promise<number | null> } {
  const script = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const lines: string[] = [];
  let partial = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, lines, exit };
}

describe("a crashed instance", () => {
  it("has its unacknowledged event redelivered to another instance", async () => {
    const worker = runFixture("hanging-worker.ts", [ts.server.url, "crashy", "trialProposed", "5"]);
    await waitFor("worker ready", () => worker.lines.includes("ready"), 20_000);
    await bus.publish(eventOf("trialProposed", "crash-run", "t-crash"));
    await waitFor("worker took the event", () => worker.lines.includes("got t-crash"));
    worker.child.kill("SIGKILL");

    const seen: Array<{ trial: string; delivery: number }> = [];
    const survivor = await bus.consume("crashy", ["trialProposed"], async (event, ctx) => {
      seen.push({ trial: event.trialId, delivery: ctx.deliveryCount });
    }, { ackWaitMs: 1_000, maxDeliver: 5 });
    await waitFor("redelivery", () => seen.length === 1, 5_000);
    await survivor.stop();
    expect(seen).toEqual([{ trial: "t-crash", delivery: 2 }]);
  });

  it("dead-letters an event whose deliveries all timed out", async () => {
    const worker = runFixture("hanging-worker.ts", [ts.server.url, "fragile", "trialAssembled", "1"]);
    await waitFor("worker ready", () => worker.lines.includes("ready"), 20_000);
    await bus.publish(eventOf("trialAssembled", "fragile-run", "t-fragile"));
    await waitFor("worker took the event", () => worker.lines.includes("got t-fragile"));
    worker.child.kill("SIGKILL");

    const handled: string[] = [];
    const dead: Array<{ event: Event; error: unknown }> = [];
    const survivor = await bus.consume("fragile", ["trialAssembled"], async (event) => void handled.push(event.trialId), {
      ackWaitMs: 1_000,
      maxDeliver: 1,
      onDeadLetter: (event, error) => void dead.push({ event, error }),
    });
    await waitFor("dead letter", () => dead.length === 1, 5_000);
    await survivor.stop();
    expect(handled).toEqual([]);
    expect(dead[0]!.event.trialId).toBe("t-fragile");
    expect(String(dead[0]!.error)).toMatch(/not acknowledged after 1 deliveries/);
  });
});

describe("a nats-server restart", () => {
  it("is survived by publishers and consumers", async () => {
    const seen: string[] = [];
    const c = await bus.consume("survivor", ["runStarted"], async (event) => void seen.push(event.trialId), {
      ackWaitMs: 1_000,
      pullExpiresMs: 2_000,
    });
    await bus.publish(eventOf("runStarted", "restart-run", "before"));
    await waitFor("event before restart", () => seen.includes("before"));

    await ts.server.stop();
    const during = bus.publish(eventOf("runStarted", "restart-run", "during"));
    await sleep(500);
    ts.server = await startNatsServer({ dataDir: ts.dataDir, port: ts.server.port });
    await during;
    await bus.publish(eventOf("runStarted", "restart-run", "after"));
    await waitFor("events after restart", () => seen.includes("during") && seen.includes("after"), 15_000);
    await c.stop();
    expect(seen).toEqual(["before", "during", "after"]);
    expect(await bus.replay("restart-run", () => undefined)).toBe(3);
  });
});

describe("closing", () => {
  it("closes within seconds when the server is already gone (a Ctrl-C reaches nats-server too)", async () => {
    const own = await startTestServer();
    const bus = await testBus(own.server.url, "close-after-server");
    const watch = await bus.watch("gone-run", () => undefined);
    await watch.caughtUp;
    await own.dispose();
    const t0 = Date.now();
    await bus.close();
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 30_000);
});

describe("startNatsServer", () => {
  it("starts the server in its own process group: a Ctrl-C in the launcher's terminal reaches the launcher alone", () => {
    // /proc/PID/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces, so count from its ")".
    const pgrp = (pid: number | "self") => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[2]);
    expect(pgrp(ts.server.pid)).toBe(ts.server.pid);
    expect(pgrp(ts.server.pid)).not.toBe(pgrp("self"));
  });

  it("fails clearly, with the server's own words, when it cannot start", async () => {
    let second: NatsServer | undefined;
    const attempt = startNatsServer({ dataDir: `${ts.dataDir}-second`, port: ts.server.port, readyTimeoutMs: 5_000 })
      .then((s) => (second = s));
    await expect(attempt).rejects.toThrow(/nats-server on port \d+ exited[\s\S]*address already in use/);
    await second?.stop();
    rmSync(`${ts.dataDir}-second`, { recursive: true, force: true });
  });
});

describe("onShutdown", () => {
  it("runs the hook once on SIGTERM and exits 0", async () => {
    const proc = runFixture("graceful-exit.ts", []);
    await waitFor("fixture ready", () => proc.lines.includes("ready"), 20_000);
    proc.child.kill("SIGTERM");
    expect(await proc.exit).toBe(0);
    expect(proc.lines).toEqual(["ready", "cleaned up"]);
  });
});
