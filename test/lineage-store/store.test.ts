import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure } from "../../core/failure.js";
import { HashingEmbedder } from "../../core/embedder.js";
import { answer } from "../../lineage-store/query.js";
import { checkRequest, decodeRequest, decodeResponse, encodeRequest, type SimilarTrialsInit } from "../../swarm/lineage-query.js";
import * as lancedb from "@lancedb/lancedb";
import { Schema } from "apache-arrow";
import { LineageStore } from "../../lineage-store/store.js";
import { runsSchema, trialsSchema } from "../../lineage-store/schema.js";
import { FailureLabel, Surface, TrialStatus } from "../../proto/gen/research/v1/common_pb.js";
import { EventSchema, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { SimilarTrialsRequestSchema } from "../../proto/gen/research/v1/lineage_pb.js";
import { DatasetInfoSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { trialId } from "../../core/ids.js";
import { runEvents, TRIALS } from "./fixtures.js";

const root = mkdtempSync(join(tmpdir(), "lineage-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type EventInit = MessageInitShape<typeof EventSchema>;

const RUN = "run-a";
const OTHER = "run-b";
const t = (i: number) => trialId(RUN, i);
const byHypothesis = (h: string) => t(TRIALS.findIndex((x) => x.hypothesis === h));

describe("LineageStore over a run's events", () => {
  const dir = join(root, "main");
  let store: LineageStore;
  const events = runEvents(RUN);
  // A second, shorter run, to check that run filters really filter; it recorded its dataset's description at launch.
  const other = runEvents(OTHER, TRIALS.slice(1, 4), 1_800_000_000_000);
  const described = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54_000, nVal: 6_000, nTest: 10_000 });
  for (const e of other) if (e.body.case === "runStarted") e.body.value.dataset = described;

  beforeAll(async () => {
    store = await LineageStore.open(dir);
    const first = await store.applyEvents([...events, ...other]);
    expect(first).toEqual({ applied: events.length + other.length, duplicates: 0, ignored: 0 });
  });
  afterAll(() => store.close());

  it("creates one row per run, trial, brief and event", async () => {
    expect(await store.count("runs")).toBe(2);
    expect(await store.count("trials")).toBe(TRIALS.length + 3);
    expect(await store.count("briefs")).toBe(2);
    expect(await store.count("events")).toBe(events.length + other.length);
  });

  it("is idempotent: the same events again, batched or one by one, change nothing", async () => {
    const before = await store.listTrials(RUN);
    const run = await store.getRun(RUN);
    expect(await store.applyEvents(events)).toEqual({ applied: 0, duplicates: events.length, ignored: 0 });
    for (const e of events.slice(0, 10)) expect((await store.applyEvent(e)).duplicates).toBe(1);
    expect(await store.count("trials")).toBe(TRIALS.length + 3);
    expect(await store.count("events")).toBe(events.length + other.length);
    expect(await store.listTrials(RUN)).toEqual(before);
    expect(await store.getRun(RUN)).toEqual(run);
  });

  it("folds the pipeline into one trial row", async () => {
    const se = (await store.getTrial(t(2)))!;
    expect(se).toMatchObject({
      run_id: RUN, index: 2, status: "judged", stage: "judged", surface: "architecture",
      hypothesis: "add squeeze-excitation blocks after each conv stage", parent_ids: [t(1)],
      adopted_concepts: ["se_block"], class_name: "Trial2", params: 58_000, flops: 116_000_000,
      val_accuracy: 0.911, std: 0.004, seeds: 3, goal_status: "not_achieved", failure_label: "",
      verdict: "accept", decision: "iterate", eval_seconds: 41.5,
    });
    expect(se.ci_low).toBeCloseTo(0.901);
    expect(se.ci_high).toBeCloseTo(0.921);
    expect(se.code).toContain("class Trial2");
    expect(se.diff).toContain(`--- ${t(1)}`);
    expect(JSON.parse(se.model_config_json).layers).toContainEqual({ type: "se" });
    expect(JSON.parse(se.result_json)).toMatchObject({ numSeeds: 3, aggregated: { val_accuracy: { mean: 0.911 } } });
    expect(JSON.parse(se.analysis_json)).toMatchObject({ overfitting: "mild", weakClasses: [6] });

    const shape = (await store.getTrial(t(8)))!;
    // The judge repeats the coder's label; the coder's message says what actually broke.
    expect(shape).toMatchObject({ status: "failed", stage: "judged", failure_label: "shape_error", verdict: "reject", params: null, val_accuracy: null });
    expect(shape.failure_message).toContain("shapes cannot be multiplied");
    expect(await store.getTrial("nope")).toBeUndefined();
  });

  it("records the run, its best trial and its brief", async () => {
    const run = (await store.getRun(RUN))!;
    expect(run).toMatchObject({
      dataset: "fashion-mnist", metric: "val_accuracy", target: 0.92, max_params: 200_000, status: "budget_exhausted",
      best_trial_id: t(9), best_score: 0.917, trials: TRIALS.length, report_path: `/runs/${RUN}/report.md`,
    });
    expect(run.goal).toContain("92% validation accuracy");
    expect(run.started_at).toBeLessThan(run.finished_at!);
    expect(JSON.parse(run.settings_json)).toMatchObject({ seeds: 3, planner: "builtin" });
    expect((await store.listRuns()).map((r) => r.run_id)).toEqual([OTHER, RUN]);

    const [brief, ...rest] = await store.briefsOf(RUN);
    expect(rest).toEqual([]);
    expect(brief).toMatchObject({ brief_id: `${RUN}-brief`, title: "Compact CNNs for Fashion-MNIST", author: "builtin" });
  });

  it("finds a trial by the meaning of a text", async () => {
    const [top] = await store.similarTrials({ text: "squeeze excitation block", k: 3 });
    expect(top!.trial_id).toBe(t(2));
    expect(top!.distance).toBeGreaterThanOrEqual(0);
    const [sched] = await store.similarTrials({ text: "warmup then cosine decay of the learning rate", k: 1, runId: RUN });
    expect(sched!.trial_id).toBe(byHypothesis("cosine learning rate schedule with linear warmup"));
  });

  it("finds a trial's near twin, and leaves the trial itself out", async () => {
    const hits = await store.similarTrials({ trialId: t(1), k: 5, runId: RUN });
    expect(hits[0]!.trial_id).toBe(byHypothesis("wider conv stack with batchnorm and more channels"));
    expect(hits.map((h) => h.trial_id)).not.toContain(t(1));
    const distances = hits.map((h) => h.distance);
    expect(distances).toEqual([...distances].sort((a, b) => a - b));
    await expect(store.similarTrials({ trialId: "missing", k: 3 })).rejects.toThrow(/unknown trial/);
    await expect(store.similarTrials({ text: "  ", k: 3 })).rejects.toThrow(/text or trialId/);
  });

  it("filters by run, failure label, status, surface and score range", async () => {
    const text = "convolutional network";
    const inRun = await store.similarTrials({ text, k: 50, runId: OTHER });
    expect(inRun.map((h) => h.trial_id).sort()).toEqual([0, 1, 2].map((i) => trialId(OTHER, i)));
    // Both runs are on fashion-mnist: the dataset filter keeps every trial, another dataset none.
    expect(await store.similarTrials({ text, k: 50, dataset: "fashion-mnist" })).toHaveLength(TRIALS.length + 3);
    expect(await store.similarTrials({ text, k: 50, dataset: "cifar10" })).toEqual([]);

    const oom = await store.similarTrials({ text, k: 50, failureLabel: "oom" });
    expect(oom.map((h) => h.trial_id)).toEqual([t(7)]);
    const shape = await store.similarTrials({ text, k: 50, failureLabel: "shape_error" });
    expect(shape.map((h) => h.trial_id).sort()).toEqual([t(8), t(11)]);
    const clean = await store.similarTrials({ text, k: 50, runId: RUN, failureLabel: "" });
    expect(clean).toHaveLength(TRIALS.length - 3);

    const failed = await store.similarTrials({ text, k: 50, status: "failed" });
    expect(failed.map((h) => h.trial_id).sort()).toEqual([t(7), t(8), t(11)]);
    const data = await store.similarTrials({ text, k: 50, surface: "data" });
    expect(data.map((h) => h.trial_id)).toEqual([t(6)]);

    const band = await store.similarTrials({ text, k: 50, runId: RUN, minScore: 0.905, maxScore: 0.912 });
    const expected = TRIALS.flatMap((x, i) => (x.score !== undefined && x.score >= 0.905 && x.score <= 0.912 ? [t(i)] : []));
    expect(band.map((h) => h.trial_id).sort()).toEqual(expected.sort());
    for (const h of band) expect(h.val_accuracy).toBeGreaterThanOrEqual(0.905);
  });

  it("returns a run's events in emission order, payload intact", async () => {
    const stored = await store.eventsOf(RUN);
    expect(stored.map((e) => e.event_id)).toEqual(events.map((e) => e.eventId));
    expect(stored[0]!.kind).toBe("run_started");
    expect(stored.at(-1)!.kind).toBe("run_finished");
    const decoded = fromBinary(EventSchema, stored[5]!.payload);
    expect(decoded).toEqual(events[5]);
    expect(stored.find((e) => e.kind === "trial_evaluated")!.summary).toMatch(/^val_accuracy 0\.8720 \[0\.8620, 0\.8820\] over 3 seeds/);

    const ofTrial = await store.eventsOf(RUN, { trialId: t(2) });
    expect(ofTrial.map((e) => e.kind)).toEqual([
      "trial_proposed", "trial_assembled", "trial_progress", "trial_progress", "trial_evaluated", "trial_judged",
    ]);
    expect(await store.eventsOf(RUN, { kind: "trial_judged" })).toHaveLength(TRIALS.length);
  });

  it("searches hypotheses by keyword through the full-text index", async () => {
    const hits = await store.searchHypotheses("excitation", { runId: RUN });
    expect(hits.map((h) => h.trial_id)).toEqual([t(2)]);
  });

  it("is seen by a second, read-only instance, including writes made after it opened", async () => {
    const reader = await LineageStore.open(dir, { readOnly: true });
    try {
      expect(await reader.listTrials(RUN)).toEqual(await store.listTrials(RUN));
      expect((await reader.similarTrials({ text: "squeeze excitation block", k: 1 }))[0]!.trial_id).toBe(t(2));
      const late = create(EventSchema, {
        runId: OTHER, trialId: trialId(OTHER, 9), eventId: "late-1", emittedAtMs: 1_900_000_000_000n, producer: "planner",
        body: { case: "trialProposed", value: { hypothesis: "mixup augmentation", surface: Surface.DATA, index: 9 } },
      });
      await store.applyEvent(late);
      expect((await reader.getTrial(trialId(OTHER, 9)))?.hypothesis).toBe("mixup augmentation");
      await expect(reader.applyEvent(late)).rejects.toThrow(/readOnly/);
    } finally {
      await reader.close();
    }
  });

  it("serves the protobuf query protocol", async () => {
    const res = decodeResponse(await answer(store, encodeRequest({ text: "squeeze excitation block", k: 2, runId: RUN })));
    expect(res.error).toBe("");
    expect(res.trials).toHaveLength(2);
    expect(res.trials[0]).toMatchObject({ trialId: t(2), surface: Surface.ARCHITECTURE, valAccuracy: 0.911 });
    expect(res.trials[0]).not.toHaveProperty("code");
    // k 0 means 10; an unspecified failure_label (with presence) means trials without a failure.
    const clean = decodeResponse(await answer(store, encodeRequest({ text: "convolutional network", runId: RUN, failureLabel: FailureLabel.UNSPECIFIED })));
    expect(clean.trials).toHaveLength(Math.min(10, TRIALS.length - 3));
    expect(clean.trials.every((h) => h.failureLabel === FailureLabel.UNSPECIFIED)).toBe(true);
    // Each trial comes with its run's dataset: as described at launch, or by its name alone for a run that recorded none.
    const all = decodeResponse(await answer(store, encodeRequest({ text: "convolutional network", k: 50 })));
    const datasetOf = (run: string) => all.trials.find((x) => x.runId === run)?.dataset;
    expect(datasetOf(OTHER)).toEqual(described);
    expect(datasetOf(RUN)).toEqual(create(DatasetInfoSchema, { name: "fashion-mnist" }));
    const failed = decodeResponse(await answer(store, encodeRequest({ text: "convolutional network", k: 50, status: TrialStatus.FAILED })));
    expect(failed.trials.map((h) => h.trialId).sort()).toEqual([t(7), t(8), t(11)]);
    const band = decodeResponse(await answer(store, encodeRequest({ text: "convolutional network", k: 50, runId: RUN, minScore: 0.905, maxScore: 0.912 })));
    expect(band.trials.length).toBeGreaterThan(0);
    for (const h of band.trials) expect(h.valAccuracy).toBeGreaterThanOrEqual(0.905);

    // Neither bytes that are no request nor a request that fails the checks make answer throw.
    const garbage = decodeResponse(await answer(store, new TextEncoder().encode(JSON.stringify({ k: 0 }))));
    expect(garbage.error).toMatch(/^not a SimilarTrialsRequest/);
    expect(garbage.trials).toEqual([]);
    const unchecked = create(SimilarTrialsRequestSchema, { text: "x", trialId: "y", k: 500, minScore: 1.5, failureLabel: 99 as FailureLabel, status: 99 as TrialStatus });
    const bad = decodeResponse(await answer(store, toBinary(SimilarTrialsRequestSchema, unchecked)));
    expect(bad.error.split("; ")).toHaveLength(5);
    expect(bad.error).toMatch(/exactly one of text or trial_id.*k must be.*min_score.*failure_label.*status/);
    const missing = decodeResponse(await answer(store, encodeRequest({ trialId: "nope" })));
    expect(missing.error).toBe("unknown trial nope");
    expect(() => encodeRequest({ text: "x", trialId: "y" })).toThrow(/exactly one/);
  });

  it("checks requests precisely", () => {
    const check = (init: SimilarTrialsInit) => checkRequest(create(SimilarTrialsRequestSchema, init));
    expect(check({ text: "x" })).toEqual([]);
    expect(check({ trialId: "t", k: 200, failureLabel: FailureLabel.UNSPECIFIED, minScore: 0, maxScore: 1, status: TrialStatus.FAILED })).toEqual([]);
    expect(check({ text: "x", failureLabel: FailureLabel.OOM, status: TrialStatus.JUDGED, surface: Surface.DATA })).toEqual([]);
    expect(check({})).toEqual(["give exactly one of text or trial_id (neither was given)"]);
    expect(check({ text: "   " })).toEqual(["text is only whitespace"]);
    expect(check({ text: "x".repeat(4001) })).toEqual(["text has 4001 characters, at most 4000 allowed"]);
    expect(check({ text: "x", k: 201 })).toEqual(["k must be an integer in 1..200 (0 means 10), got 201"]);
    expect(check({ text: "x", maxScore: -0.1 })).toEqual(["max_score must be in [0, 1], got -0.1"]);
    expect(check({ text: "x", minScore: Number.NaN })).toEqual(["min_score must be in [0, 1], got NaN"]);
    // Numbers this build cannot name, as a peer built from a newer proto may send.
    expect(check({ text: "x", failureLabel: 42 as FailureLabel })[0]).toMatch(/^failure_label must be unspecified \(no failure\) or one of invalid_config, .*got 42$/);
    expect(check({ text: "x", status: 42 as TrialStatus })).toEqual(["status must be one of proposed, assembled, evaluated, judged, failed, got 42"]);
    expect(check({ text: "x", surface: 42 as Surface })).toEqual(["surface must be one of architecture, optimisation, regularisation, data, got 42"]);
    // Presence survives the wire: unspecified is a filter, unset is none.
    expect(decodeRequest(encodeRequest({ text: "x", failureLabel: FailureLabel.UNSPECIFIED })).failureLabel).toBe(FailureLabel.UNSPECIFIED);
    expect(decodeRequest(encodeRequest({ text: "x" })).failureLabel).toBeUndefined();
  });
});

describe("LineageStore write semantics", () => {
  it("gives the same rows whether events come one by one or in one batch", async () => {
    const events = runEvents("same", TRIALS.slice(0, 5));
    const one = await LineageStore.open(join(root, "one"));
    const batch = await LineageStore.open(join(root, "batch"));
    for (const e of events) await one.applyEvent(e);
    await batch.applyEvents(events);
    expect(await one.listTrials("same")).toEqual(await batch.listTrials("same"));
    expect(await one.getRun("same")).toEqual(await batch.getRun("same"));
    expect(await one.eventsOf("same")).toEqual(await batch.eventsOf("same"));
    // Each trial row was rewritten once per stage: the full-text index must see only the latest copy.
    expect((await one.searchHypotheses("excitation")).map((h) => h.trial_id)).toEqual([trialId("same", 2)]);
    await Promise.all([one.close(), batch.close()]);
  });

  it("copes with late and repeated events: stages only move forward, the root-cause failure wins", async () => {
    const store = await LineageStore.open(join(root, "order"));
    const events = runEvents("ooo", TRIALS.slice(0, 2));
    const id = trialId("ooo", 1);
    const ofTrial = events.filter((e) => e.trialId === id);
    // Judged first (a redelivery overtook the rest), then everything, then judged again.
    await store.applyEvents([ofTrial.at(-1)!]);
    expect(await store.getTrial(id)).toMatchObject({ status: "judged", hypothesis: "", verdict: "accept" });
    await store.applyEvents(events);
    expect(await store.getTrial(id)).toMatchObject({ status: "judged", hypothesis: TRIALS[1]!.hypothesis, val_accuracy: 0.903 });

    // Failures of two stages of one trial, in both arrival orders: the row names the earliest
    // stage's failure either way, as trialFailure does for the report and the agents.
    const ev = (trial: string, n: number, body: EventInit["body"]) =>
      create(EventSchema, { runId: "ooo", trialId: trial, eventId: `${trial}/x${n}`, emittedAtMs: BigInt(2e12 + n), body });
    const judgedIllegal = (trial: string) => ev(trial, 1, {
      case: "trialJudged",
      value: { verdict: Verdict.ILLEGAL, reason: "used the test split", failure: failure("illegal", "test split used"), trialsDone: 2 },
    });
    const assemblyFailed = (trial: string) => ev(trial, 2, { case: "trialAssembled", value: { failure: failure("codegen_error", "does not import") } });
    await store.applyEvent(judgedIllegal(id));
    expect(await store.getTrial(id)).toMatchObject({ status: "failed", failure_label: "illegal", failure_stage: "judged" });
    await store.applyEvent(assemblyFailed(id));
    const other = trialId("ooo", 0);
    await store.applyEvent(assemblyFailed(other));
    await store.applyEvent(judgedIllegal(other));
    for (const trial of [id, other]) {
      expect(await store.getTrial(trial)).toMatchObject({
        status: "failed", failure_label: "codegen_error", failure_message: "does not import", failure_stage: "assembled", verdict: "illegal",
      });
    }
    expect((await store.getRun("ooo"))!.status).toBe("budget_exhausted");
    await store.close();
  });

  it("adds the columns a directory of an older version lacks", async () => {
    const dir = join(root, "old-version");
    const db = await lancedb.connect(dir);
    const current = trialsSchema(256, new HashingEmbedder().name);
    const old = new Schema(current.fields.filter((f) => f.name !== "failure_stage"), current.metadata);
    await db.createEmptyTable("trials", old);
    db.close();
    const store = await LineageStore.open(dir);
    await store.applyEvents(runEvents("old", TRIALS.slice(0, 2)));
    expect(await store.getTrial(trialId("old", 1))).toMatchObject({ failure_stage: "", status: "judged" });
    await store.close();
  });

  it("ignores heartbeats and rejects events without an id", async () => {
    const store = await LineageStore.open(join(root, "beats"));
    const beat = create(EventSchema, { eventId: "hb", body: { case: "heartbeat", value: { role: "planner", instance: "p1" } } });
    expect(await store.applyEvent(beat)).toEqual({ applied: 0, duplicates: 0, ignored: 1 });
    expect(await store.count("events")).toBe(0);
    await expect(store.applyEvent(create(EventSchema, { runId: "r" }))).rejects.toThrow(/event_id/);
    // The failed write must not wedge the queue behind it.
    expect((await store.applyEvent(create(EventSchema, { runId: "r", eventId: "e1" }))).applied).toBe(1);
    await store.close();
  });

  it("compacts on its own and keeps answering", async () => {
    const store = await LineageStore.open(join(root, "compact"), { compactEvery: 5 });
    const events = runEvents("c", TRIALS.slice(0, 4));
    for (const e of events) await store.applyEvent(e);
    expect(await store.count("events")).toBe(events.length);
    const [near] = await store.similarTrials({ trialId: trialId("c", 1), k: 1 });
    expect(near!.trial_id).not.toBe(trialId("c", 1));
    await store.optimize();
    expect(await store.listTrials("c")).toHaveLength(4);
    await store.close();
  });

  it("refuses a directory built with another embedder, and a read-only open of nothing", async () => {
    const dir = join(root, "embedder");
    const store = await LineageStore.open(dir, { embedder: new HashingEmbedder({ dim: 64 }) });
    await store.close();
    await expect(LineageStore.open(dir)).rejects.toThrow(/hashing-v1-64/);
    await expect(LineageStore.open(join(root, "empty"), { readOnly: true })).rejects.toThrow(/no lineage store/);
  });

  it("is written only once its writer has created every table and the trials' text index", async () => {
    const dir = join(root, "half");
    expect(await LineageStore.written(dir)).toBe(false);
    // What a reader finds while the writer is part way through creating the store.
    const db = await lancedb.connect(dir);
    const embedder = new HashingEmbedder();
    await db.createEmptyTable("runs", runsSchema(embedder.dim, embedder.name));
    db.close();
    expect(await LineageStore.written(dir)).toBe(false);
    const store = await LineageStore.open(dir);
    expect(await LineageStore.written(dir)).toBe(true);
    await store.close();
  });
});
