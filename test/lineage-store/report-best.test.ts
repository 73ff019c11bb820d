import { describe, expect, it } from "vitest";
import { trialId } from "../../core/ids.js";
import { buildReport } from "../../lineage-store/report.js";
import { applyToRunState, emptyRunState } from "../../swarm/run-state.js";
import { runEvents } from "./fixtures.js";

describe("report", () => {
  it("says why the best trial is best", () => {
    const events = runEvents("why");
    const state = emptyRunState("why");
    for (const e of events) applyToRunState(state, e);
    const finished = events.at(-1)!.body;
    if (finished.case !== "runFinished") throw new Error("the fixture run ends with run_finished");
    const { markdown } = buildReport(state, finished.value);
    // Scores 0.917 and 0.914 with CI half-width 0.01 (fixtures).
    expect(markdown).toContain(`lower bound is the highest of the accepted trials: 90.70% vs 90.40% for the runner-up \`${trialId("why", 3)}\``);
  });
});
