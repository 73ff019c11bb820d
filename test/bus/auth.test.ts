/**
 * A deployment's credentials (core/secrets.ts) against a real nats-server
 * and a real runner: its own clients get in; a client without credentials,
 * with a wrong password or token, or with another deployment's secrets is
 * refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { connect } from "@nats-io/transport-node";
import { connectBus, startNatsServer, type NatsServer } from "../../bus/index.js";
import { ensureSecrets, loadSecrets, type Secrets } from "../../core/secrets.js";
import { createClient } from "../../core/grpc.js";
import { connectRunner, runnerCredentials } from "../../gpu-runner/client.js";
import { startRunner, type RunningRunner } from "../../gpu-runner/server.js";
import { RunnerService } from "../../proto/gen/research/v1/runner_pb.js";
import { testLogger } from "./helpers.js";

let root: string;
let ours: Secrets;
let theirs: Secrets;
let nats: NatsServer;
let runner: RunningRunner;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "auth-test-"));
  ours = ensureSecrets(join(root, "ours"));
  theirs = ensureSecrets(join(root, "theirs"));
  nats = await startNatsServer({ dataDir: join(root, "nats"), secrets: ours });
  runner = await startRunner({ slots: 1, secrets: ours, logger: testLogger });
}, 60_000);

afterAll(async () => {
  await runner?.close();
  await nats?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("a deployment's secrets", () => {
  it("are made once, readable by their owner only", () => {
    expect(statSync(ours.dir).mode & 0o777).toBe(0o700);
    for (const f of [ours.files.ca, ours.files.cert, ours.files.key, join(ours.dir, "nats.json"), join(ours.dir, "runner-token")]) {
      expect(statSync(f).mode & 0o777).toBe(0o600);
    }
    expect(ensureSecrets(ours.dir)).toEqual(ours);
    expect(theirs.runnerToken).not.toBe(ours.runnerToken);
    expect(readFileSync(ours.files.ca, "utf8")).not.toBe(readFileSync(theirs.files.ca, "utf8"));
  });

  it("refuse a folder whose credentials file is not JSON in one line, not a parser's exception", () => {
    const broken = join(root, "broken");
    cpSync(ours.dir, broken, { recursive: true });
    writeFileSync(join(broken, "nats.json"), "{ user: oops");
    expect(() => loadSecrets(broken)).toThrow(`the secrets folder ${broken}: nats.json needs a user and a password of 16+ characters, runner-token a token of 16+`);
  });
});

describe("the bus", () => {
  const refused = (opts: Parameters<typeof connect>[0]) =>
    expect(connect({ servers: nats.url, reconnect: false, timeout: 3000, ...opts })).rejects.toThrow();

  it("lets its own clients in, over TLS", async () => {
    const bus = await connectBus({ servers: nats.url, name: "auth-test", logger: testLogger, secrets: ours });
    expect((await bus.nc.info)?.tls_required).toBe(true);
    await bus.close();
  });

  it("refuses a client without credentials, with a wrong password, or of another deployment", async () => {
    await refused({});
    await refused({ tls: { caFile: ours.files.ca } });
    await refused({ user: ours.nats.user, pass: "not-the-password", tls: { caFile: ours.files.ca } });
    // Their CA does not vouch for our server, whatever password they hold.
    await refused({ user: ours.nats.user, pass: ours.nats.password, tls: { caFile: theirs.files.ca } });
    await refused({ user: theirs.nats.user, pass: theirs.nats.password, tls: { caFile: ours.files.ca } });
  });
});

describe("the runner", () => {
  it("answers its own clients, over TLS with the token", async () => {
    const client = connectRunner(runner.address, ours);
    expect((await client.health({})).workersReady).toBe(1);
    client.close();
  });

  it("refuses a client without TLS, without the token, or of another deployment", async () => {
    const attempts = [
      createClient(RunnerService, runner.address),
      createClient(RunnerService, runner.address, grpc.credentials.createSsl(readFileSync(ours.files.ca))),
      createClient(RunnerService, runner.address, runnerCredentials(ours, theirs.runnerToken)),
      connectRunner(runner.address, theirs),
    ];
    for (const client of attempts) {
      await expect(client.health({}, { timeoutMs: 5000 })).rejects.toMatchObject({ label: "runner_unavailable" });
      client.close();
    }
    const noToken = createClient(RunnerService, runner.address, grpc.credentials.createSsl(readFileSync(ours.files.ca)));
    await expect(noToken.describe({ dataset: { name: "digits" } })).rejects.toThrow(/no valid token/);
    // Trained weights are the deployment's too.
    await expect(noToken.fetchWeights({ runId: "r", trialId: "t" })[Symbol.asyncIterator]().next()).rejects.toThrow(/no valid token/);
    noToken.close();
  });
});
