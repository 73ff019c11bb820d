import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  consumerName,
  decodeEvent,
  encodeEvent,
  EVENT_KINDS,
  filterFor,
  heartbeatSubject,
  progressSubject,
  runFilter,
  subjectFor,
} from "../../bus/index.js";
import { EventSchema } from "../../proto/gen/research/v1/events_pb.js";
import { eventOf } from "./helpers.js";

describe("subjects", () => {
  it("derives one two-token subject per stored kind from the proto", () => {
    expect(EVENT_KINDS).toEqual([
      "runStarted",
      "briefReady",
      "trialProposed",
      "trialAssembled",
      "trialEvaluated",
      "trialJudged",
      "runFinished",
      "llmCall",
      "researchRequested",
      "runIntervention",
      "runResumed",
      "plannerIdle",
      "runnerJobs",
    ]);
    const subjects = EVENT_KINDS.map((k) => subjectFor(create(EventSchema, eventOf(k, "run-1"))));
    expect(subjects).toContain("research.trial.proposed.run-1");
    expect(subjects).toContain("research.run.finished.run-1");
    expect(subjects).toContain("research.llm.call.run-1");
    expect(subjects).toContain("research.run.intervention.run-1");
    expect(subjects).toContain("research.run.resumed.run-1");
    for (const s of subjects) expect(s).toMatch(/^research\.[a-z-]+\.[a-z-]+\.run-1$/);
  });

  it("builds filters for one kind, one run or everything", () => {
    expect(filterFor("trialJudged")).toBe("research.trial.judged.*");
    expect(filterFor("trialJudged", "r7")).toBe("research.trial.judged.r7");
    expect(runFilter("r7")).toBe("research.*.*.r7");
    expect(runFilter("*")).toBe("research.>");
  });

  it("keeps heartbeats and progress off the research stream", () => {
    const beat = create(EventSchema, { body: { case: "heartbeat", value: { role: "coder", instance: "h-1" } } });
    expect(subjectFor(beat)).toBe("swarm.heartbeat.coder.h-1");
    expect(heartbeatSubject()).toBe("swarm.heartbeat.*.*");
    expect(subjectFor(create(EventSchema, eventOf("trialProgress", "run-1", "t1")))).toBe("swarm.progress.run-1");
    expect(progressSubject()).toBe("swarm.progress.*");
  });

  it("names durables after role and kind", () => {
    expect(consumerName("coder", "trialProposed")).toBe("coder-trial-proposed");
  });

  it("rejects ids that would break the subject", () => {
    expect(() => subjectFor(create(EventSchema, eventOf("runStarted", "a.b")))).toThrow(/run_id "a.b"/);
    expect(() => subjectFor(create(EventSchema, eventOf("runStarted", "")))).toThrow(/run_id/);
    expect(() => consumerName("co der", "runStarted")).toThrow(/role/);
    expect(() => subjectFor(create(EventSchema, { runId: "r" }))).toThrow(/no body/);
  });
});

describe("codec", () => {
  it("round-trips an event and refuses bytes that are not one", () => {
    const event = create(EventSchema, eventOf("trialProposed", "r1", "t1"));
    expect(decodeEvent(encodeEvent(event)).trialId).toBe("t1");
    expect(() => decodeEvent(new TextEncoder().encode("{\"json\": true}"))).toThrow(expect.objectContaining({ label: "invalid_config" }));
    expect(() => decodeEvent(new Uint8Array())).toThrow(/without a body/);
  });
});
