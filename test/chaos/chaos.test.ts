/**
 * Chaos on loopback: a short digits run on a 3-node JetStream cluster (stream
 * at 3 replicas) while the lineage store, the runner, four agents at once, the
 * store, runner and analyst at once, and a NATS node are killed, each at a
 * point where it holds work. The run must
 * end, every trial once, each with a verdict or a failure label, and the
 * restarted lineage store must hold every event of the run exactly once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsServer } from "../../bus/index.js";
import { startCluster, whenClusterReady } from "../bus/helpers.js";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { runGoal, runSettings, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { LineageStore } from "../../lineage-store/store.js";
import { lineageEmbedder } from "../../lineage-store/embedder.js";
import { type Event } from "../../proto/gen/research/v1/events_pb.js";
import { trialFailure } from "../../swarm/run-state.js";

let root: string;
let nodes: NatsServer[] = [];
let swarm: Swarm;
let outcome: RunOutcome;
const seen: Event[] = [];
const chaos: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "chaos-test-"));
  nodes = await startCluster(root);
  const logger = createLogger("chaos-test");
  logger.level = "error";
  const workspace = join(root, "workspace");
  swarm = await whenClusterReady(() => startSwarm({ workspace, natsUrl: nodes.map((n) => n.url).join(","), replicas: 3, slots: 2, logger }));
  const parsed = parseGoal("digits: reach 99.9% validation accuracy in 6 minutes");
  if (!parsed.ok) throw new Error(parsed.error);
  const kill = (what: string, names: string[]) => {
    chaos.push(what);
    for (const name of names) swarm.supervisor.child(name)?.kill("SIGKILL");
  };
  const count = (kind: string) => seen.filter((e) => e.body.case === kind).length;
  outcome = await runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { maxTrials: 6, seeds: 2, parallel: 2, epochs: 2, trialTimeBudgetS: 90 }, workspace) },
    log: logger,
    onEvent: (e) => {
      seen.push(e);
      const kind = e.body.case;
      if (kind === "trialEvaluated" && count(kind) === 1) kill("lineage-store", ["lineage-store"]);
      if (kind === "trialAssembled" && count(kind) === 2) setTimeout(() => kill("runner", ["gpu-runner"]), 500); // mid-evaluation
      if (kind === "trialProposed" && count(kind) === 4) kill("agents", ["planner", "coder", "analyst", "judge"]);
      if (kind === "trialJudged" && count(kind) === 2) kill("store, runner and analyst together", ["lineage-store", "gpu-runner", "analyst"]);
      if (kind === "trialJudged" && count(kind) === 3) {
        chaos.push("nats node");
        void nodes[1]!.stop();
      }
    },
  });
}, 900_000);

afterAll(async () => {
  await swarm?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(root, { recursive: true, force: true });
});

it("ends with every trial once, each judged or labelled, and a lineage that lost and doubled nothing", async () => {
  expect(chaos).toEqual(expect.arrayContaining(["lineage-store", "runner", "agents", "store, runner and analyst together", "nats node"]));
  expect(outcome.finished.trials).toBeGreaterThanOrEqual(3);
  const byTrial = (id: string, kind: string) => seen.filter((e) => e.trialId === id && e.body.case === kind).length;
  for (const id of outcome.state.order) {
    expect(byTrial(id, "trialProposed"), id).toBe(1);
    for (const kind of ["trialAssembled", "trialEvaluated", "trialJudged"]) expect(byTrial(id, kind), `${id} ${kind}`).toBeLessThanOrEqual(1);
    const t = outcome.state.trials.get(id)!;
    expect(t.judged !== undefined || trialFailure(t) !== undefined, `${id} has neither a verdict nor a label`).toBe(true);
  }
  expect(seen.filter((e) => e.body.case === "runFinished")).toHaveLength(1);

  // The restarted store caught up: every event of the run, each once.
  const dir = join(root, "workspace", "lineage");
  // Per-epoch progress is live only (core NATS, no id) and never stored.
  const ids = seen.filter((e) => e.eventId !== "").map((e) => e.eventId).sort();
  let stored: string[] = [];
  for (let i = 0; i < 30 && stored.length < ids.length; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 2000));
    const store = await LineageStore.open(dir, { readOnly: true, embedder: await lineageEmbedder(dir), logger: createLogger("chaos-test") });
    stored = (await store.eventsOf(outcome.runId)).map((r) => r.event_id).sort();
    await store.close();
  }
  expect(ids.filter((id) => !stored.includes(id)), "events the store never got").toEqual([]);
  expect(stored).toEqual(ids);
}, 120_000);
