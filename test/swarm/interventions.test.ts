/**
 * People acting on a live run, on real parts (nats-server, the sandboxed
 * runner, every agent as its own process): pause holds new work, a queued
 * hand-written proposal is taken on resume and evaluated like any other, a
 * cancelled trial is labelled cancelled, and a stop ends the run stopped
 * with its report. Each action is an event in the run's lineage.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { LineageStore } from "../../lineage-store/store.js";
import { lineageEmbedder } from "../../lineage-store/embedder.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseGoal } from "../../core/goal.js";
import { createLogger } from "../../core/logger.js";
import { labelName } from "../../core/failure.js";
import { InterventionKind, RunStatus, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { runGoal, startSwarm, type RunOutcome, type Swarm } from "../../deploy/swarm.js";
import { runSettings } from "../../deploy/settings.js";
import { emptyRunState, applyToRunState, inFlight, type RunState } from "../../swarm/run-state.js";
import { trialFailure } from "../../swarm/trial-state.js";
import { interventionEvent, type InterventionRequest } from "../../swarm/interventions.js";
import { unwrapped } from "../helpers/markdown.js";

let workspace: string;
let swarm: Swarm;
const state: RunState = emptyRunState("pending");
const seen: Event[] = [];
let outcome: Promise<RunOutcome>;
const log: string[] = [];

async function until(what: string, ok: () => boolean, timeoutMs = 90_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}; seen: ${log.join(" | ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function act(request: InterventionRequest): Promise<string> {
  const check = interventionEvent(state, request, "test:alice");
  if (!check.ok) throw new Error(check.error);
  await swarm.bus.publish(check.event);
  const id = (check.event.body as { value: { interventionId: string } }).value.interventionId;
  await until(`intervention ${id} folded`, () => state.interventions.some((v) => v.interventionId === id));
  return id;
}

const HAND_MODEL = { name: "hand-mlp", layers: [{ type: "flatten" }, { type: "linear", out_features: 24 }, { type: "activation", fn: "gelu" }] };

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), "interventions-test-"));
  const logger = createLogger("interventions-test");
  logger.level = "warn";
  swarm = await startSwarm({ workspace, slots: 2, logger });
  const parsed = parseGoal("digits: reach 99.9% validation accuracy in 10 minutes");
  if (!parsed.ok) throw new Error(parsed.error);
  outcome = runGoal(swarm, {
    start: { goal: parsed.goal, settings: runSettings(parsed.goal, { maxTrials: 30, seeds: 1, parallel: 2, epochs: 2, research: false, trialTimeBudgetS: 120 }, workspace) },
    log: logger,
    onEvent: (e) => {
      seen.push(e);
      if (state.runId === "pending") state.runId = e.runId;
      applyToRunState(state, e);
      if (e.body.case !== "trialProgress") log.push(`${e.trialId.slice(-4)} ${e.body.case}`);
    },
  });
}, 300_000);

afterAll(async () => {
  await swarm?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe("interventions on a live run", () => {
  let proposeId = "";

  it("pause: trials in flight finish, nothing new starts", async () => {
    await until("a first trial", () => state.order.length > 0);
    await act({ kind: "pause", reason: "looking at the curves" });
    expect(state.paused).toBe(true);
    await until("the trials in flight to be judged", () => state.order.length > 0 && !inFlight(state));
    const proposed = state.order.length;
    await new Promise((r) => setTimeout(r, 4000));
    expect(state.order.length).toBe(proposed);
    expect(state.finished).toBe(false);
  }, 180_000);

  it("refuses what makes no sense, in one line", () => {
    const bad = (r: InterventionRequest) => {
      const c = interventionEvent(state, r, "test:alice");
      return c.ok ? "accepted" : c.error;
    };
    expect(bad({ kind: "pause" })).toMatch(/already paused/);
    expect(bad({ kind: "cancel_trial", trial_id: "t999" })).toMatch(/no trial t999/);
    expect(bad({ kind: "propose", hypothesis: "x", model_config: { layers: [] } })).toMatch(/model_config/);
    expect(bad({ kind: "propose", hypothesis: "x", model_config: HAND_MODEL, train_config: { lr: -1 } })).toMatch(/train_config/);
    expect(bad({ kind: "propose", hypothesis: "x", model_config: HAND_MODEL, parent_ids: ["t404"] })).toMatch(/no parent trial/);
    expect(bad({ kind: "explode" } as unknown as InterventionRequest)).toMatch(/kind/);
  });

  it("a queued proposal waits while paused and is taken first on resume", async () => {
    const parent = state.order[0]!;
    proposeId = await act({ kind: "propose", hypothesis: "a wide GELU MLP", model_config: HAND_MODEL, train_config: { lr: 0.003 }, parent_ids: [parent] });
    await new Promise((r) => setTimeout(r, 2000));
    expect([...state.trials.values()].some((t) => t.proposed?.interventionId === proposeId)).toBe(false);
    await act({ kind: "resume" });
    await until("the hand-written trial", () => [...state.trials.values()].some((t) => t.proposed?.interventionId === proposeId));
    const hand = [...state.trials.values()].find((t) => t.proposed?.interventionId === proposeId)!;
    expect(hand.proposed!.proposer).toBe("test:alice");
    expect(hand.proposed!.parentIds).toEqual([parent]);
    const train = hand.train!;
    // The person's lr over the run's probe fidelity.
    expect(train.lr).toBe(0.003);
    expect(train.epochs).toBe(2);
    await until("the hand-written trial judged", () => hand.judged !== undefined);
    expect(trialFailure(hand)).toBeUndefined();
    expect(hand.evaluated?.result?.aggregated.val_accuracy?.mean).toBeGreaterThan(0.5);
  }, 180_000);

  it("cancel: a trial in flight is labelled cancelled and judged", async () => {
    // A digits probe trains for well under a second: one may end before the cancel reaches it
    // (then it is judged as it ended, and the cancel changes nothing), so the next one is tried.
    for (let attempt = 1; ; attempt++) {
      await until("a trial in flight", () => [...state.trials.values()].some((t) => t.proposed && !t.evaluated));
      const victim = [...state.trials.values()].find((t) => t.proposed && !t.evaluated)!;
      await act({ kind: "cancel_trial", trial_id: victim.id, reason: "not worth it" });
      await until("the cancelled trial judged", () => victim.judged !== undefined);
      const f = trialFailure(victim);
      if (!f && attempt < 5) continue;
      expect(labelName(f!.label)).toBe("cancelled");
      expect(f!.message).toMatch(/^asked by test:alice: not worth it$/);
      return;
    }
  }, 120_000);

  it("stop: the run ends stopped, with its report, and the lineage keeps every action", async () => {
    await act({ kind: "stop", reason: "enough" });
    const done = await outcome;
    expect(done.finished.status).toBe(RunStatus.STOPPED);
    expect(done.finished.reason).toMatch(/stopped by test:alice: enough/);
    expect(existsSync(done.finished.reportPath)).toBe(true);
    const report = unwrapped(readFileSync(done.finished.reportPath, "utf8"));
    const hand = [...state.trials.values()].find((t) => t.proposed?.interventionId === proposeId)!;
    expect(report).toContain("## Interventions");
    // After the title a trial goes by its number in the run.
    expect(report).toContain(`became \`${hand.id.slice(state.runId.length + 1)}\``);
    // The lineage store keeps each action as an event, with who did it.
    const store = await LineageStore.open(join(workspace, "lineage"), { readOnly: true, embedder: await lineageEmbedder(join(workspace, "lineage")) });
    const stored = await store.eventsOf(state.runId, { kind: "run_intervention" });
    await store.close();
    expect(stored.map((r) => r.summary)).toEqual(expect.arrayContaining([expect.stringMatching(/^cancel_trial by test:alice \(.*\): not worth it$/), "stop by test:alice: enough"]));
    // One cancel or more (a victim may end before its cancel reaches it: the test tries the next).
    const kinds = state.interventions.map((v) => v.kind);
    expect(stored).toHaveLength(kinds.length);
    const cancels = kinds.filter((k) => k === InterventionKind.CANCEL_TRIAL).length;
    expect(cancels).toBeGreaterThanOrEqual(1);
    expect(kinds).toEqual([InterventionKind.PAUSE, InterventionKind.PROPOSE, InterventionKind.RESUME, ...Array(cancels).fill(InterventionKind.CANCEL_TRIAL), InterventionKind.STOP]);
    expect(state.interventions.every((v) => v.who === "test:alice")).toBe(true);
    // Whatever a planner had under way when the stop came was cancelled, not trained.
    const stopAt = seen.findIndex((e) => e.body.case === "runIntervention" && e.body.value.kind === InterventionKind.STOP);
    const late = seen.slice(stopAt + 1).filter((e) => e.body.case === "trialProposed").map((e) => state.trials.get(e.trialId)!);
    for (const t of late) expect(t.evaluated?.result?.aggregated.val_accuracy === undefined || labelName(trialFailure(t)!.label) === "cancelled").toBe(true);
  }, 180_000);
});
