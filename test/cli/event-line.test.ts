/**
 * The console's lines: a judgement says the run's time budget left, an epoch the time its
 * training has left (by its clock when the clock stops it, else at its pace); on a terminal an
 * epoch's line is rewritten by the next, elsewhere every line stands.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create, fromJsonString } from "@bufbuild/protobuf";
import { describeEvent } from "../../cli/event-line.js";
import { sayer } from "../../cli/swarm-run.js";
import { EventSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { applyToRunState, emptyRunState } from "../../swarm/run-state.js";

const events = readFileSync(join(import.meta.dirname, "..", "fixtures", "runs", "h200-5.5min-open-ea238f7.jsonl"), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => fromJsonString(EventSchema, l));

function replay(upTo: (e: Event) => boolean) {
  const state = emptyRunState(events[0]!.runId);
  for (const e of events) {
    applyToRunState(state, e);
    if (upTo(e)) return { state, e };
  }
  throw new Error("no such event");
}

describe("the console's lines", () => {
  afterEach(() => vi.restoreAllMocks());

  it("say the budget left after a judgement, on the run's live clock", () => {
    const { state, e } = replay((x) => x.body.case === "trialJudged");
    const left = state.goal!.timeBudgetS - (Number(e.emittedAtMs) - state.startedAtMs) / 1000;
    expect(state.goal!.timeBudgetS).toBe(300);
    expect(describeEvent(e, state)).toMatch(new RegExp(`\\| 1 judged, 3 in flight \\| ${(left / 60).toFixed(1)} min of 5\\.0 min left$`));
  });

  it("say an epoch's time left: by the clock that stops the last training, else at the pace so far", () => {
    const last = replay((x) => x.body.case === "trialProposed" && x.body.value.lastTraining);
    const progress = (trialId: string, epoch: number, epochs: number, seconds: number) =>
      create(EventSchema, { runId: last.state.runId, trialId, body: { case: "trialProgress", value: { progress: { seed: 0, epoch, epochs, seconds, valMetric: 0.9 } } } });
    // The recorded last training: 133 s of clock for an upper bound of epochs.
    const clocked = describeEvent(progress(last.e.trialId, 3, 200, 40), last.state)!;
    expect(clocked).toMatch(/epoch 3\/200 \(seed 0\): val_accuracy 90\.00%, 40 s, ~1\.6 min left; its clock stops it at 2\.2 min, before epoch 200$/);
    const probe = [...last.state.trials.values()].find((t) => !t.train?.train_seconds)!;
    expect(describeEvent(progress(probe.id, 2, 5, 20), last.state)).toMatch(/epoch 2\/5 \(seed 0\): val_accuracy 90\.00%, 20 s, ~30\.0 s left$/);
  });

  it("rewrite an epoch's line on a terminal, and keep every line elsewhere", () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (written.push(String(chunk)), true));
    const tty = sayer(false, true);
    tty("epoch 1/3", true);
    tty("epoch 2/3", true);
    tty("t001 judged");
    expect(written.map((w) => w.replace(/\[\s*\d+s\] /, ""))).toEqual(["epoch 1/3", "\r\x1b[Kepoch 2/3", "\r\x1b[Kt001 judged\n"]);
    written.length = 0;
    const plain = sayer(false, false);
    plain("epoch 1/3", true);
    plain("t001 judged");
    expect(written.map((w) => w.replace(/\[\s*\d+s\] /, ""))).toEqual(["epoch 1/3\n", "t001 judged\n"]);
  });
});
