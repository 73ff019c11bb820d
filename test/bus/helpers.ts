import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { connectBus, freePort, startNatsServer, type Bus, type BodyCase, type EventInit, type NatsServer } from "../../bus/index.js";

/** Quiet unless LOG_LEVEL asks otherwise: several tests provoke warnings on purpose. */
export const testLogger = pino({ level: process.env.LOG_LEVEL ?? "silent" });

export interface TestServer {
  server: NatsServer;
  dataDir: string;
  /** Stops the server and removes its store. */
  dispose(): Promise<void>;
}

export async function startTestServer(): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "bus-test-"));
  const ts: TestServer = {
    server: await startNatsServer({ dataDir }),
    dataDir,
    // The current server: a restart test replaces it, and the replacement must be stopped too.
    dispose: async () => {
      await ts.server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ts;
}

export function testBus(url: string, name: string): Promise<Bus> {
  return connectBus({ servers: url, name, logger: testLogger, reconnectTimeWaitMs: 200 });
}

/** A minimal event of one kind; bodies are left at their defaults. */
export function eventOf(kind: BodyCase, runId: string, trialId = "", ids: { eventId?: string } = {}): EventInit {
  return { runId, trialId, ...ids, body: { case: kind, value: {} } as EventInit["body"] };
}

export async function waitFor(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Three JetStream nodes clustered on loopback, their stores under `root`. */
export async function startCluster(root: string): Promise<NatsServer[]> {
  const routes = [await freePort(), await freePort(), await freePort()];
  return Promise.all(routes.map((port, i) => startNatsServer({ dataDir: join(root, `nats-${i}`), cluster: { name: `n${i}`, port, routes } })));
}

/** Retries `attempt` until the cluster has elected its JetStream leader and the stream can be made. */
export async function whenClusterReady<T>(attempt: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
