import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { summarise } from "../../cli/ablation.js";
import { EventSchema, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { evaluated, proposed, RUN } from "../agents/helpers.js";
import type { EventInit } from "../../bus/index.js";

const judged = (id: string, best: string, ciLow: number): EventInit => ({
  runId: RUN,
  trialId: id,
  body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, bestTrialId: best, ciLow } },
});

describe("an ablation arm's summary", () => {
  it("scores the run's best as the judge named it, not its highest one-seed probe", () => {
    const events = [
      proposed("probe"),
      evaluated("probe", 0.95, 0.005, { n: 1 }),
      judged("probe", "probe", 0.945),
      proposed("t1"),
      evaluated("t1", 0.9),
      judged("t1", "t1", 0.89),
    ].map((e) => create(EventSchema, e) as Event);
    const arm = summarise(false, 0, RUN, events, "completed", 10);
    expect(arm).toMatchObject({ bestMean: 0.9, bestCiLow: 0.89, trials: 2 });
  });
});
