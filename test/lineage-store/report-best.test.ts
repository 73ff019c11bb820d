import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { trialId } from "../../core/ids.js";
import { buildReport } from "../../lineage-store/report.js";
import { EventSchema, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { SeedResultSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { applyToRunState, emptyRunState } from "../../swarm/run-state.js";
import { runEvents, TRIALS } from "./fixtures.js";
import { unwrapped } from "../helpers/markdown.js";

function reportOf(events: Event[]) {
  const state = emptyRunState(events[0]!.runId);
  for (const e of events) applyToRunState(state, e);
  const finished = events.find((e) => e.body.case === "runFinished")!.body;
  if (finished.case !== "runFinished") throw new Error("the fixture run ends with run_finished");
  return buildReport(state, finished.value);
}

/** A one-seed probe scored on 300 validation examples, accepted, with the highest lower bound of the run. */
function probe(runId: string, index: number): Event[] {
  const id = trialId(runId, index);
  return [
    create(EventSchema, { runId, trialId: id, eventId: `${id}-p`, body: { case: "trialProposed", value: { hypothesis: "a probe", index, modelConfigJson: "{}", trainConfigJson: "{}" } } }),
    create(EventSchema, {
      runId, trialId: id, eventId: `${id}-e`,
      body: {
        case: "trialEvaluated",
        value: { result: { aggregated: { val_accuracy: { mean: 0.97, ci95: [0.95, 0.99], n: 1 } }, numSeeds: 1, seedResults: [{ seed: 0, valExamples: 300 }] } },
      },
    }),
    create(EventSchema, { runId, trialId: id, eventId: `${id}-j`, body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT } } }),
  ];
}

/** The run's events with the best trial's evaluation changed by `edit`. */
function withBestResult(runId: string, edit: (r: { seedResults: { seed: number; seedsTogether: number }[]; seedsApart: string }) => void): Event[] {
  const events = runEvents(runId);
  const best = reportOf(events).json.outcome.best_trial_id;
  for (const e of events) {
    if (e.trialId === best && e.body.case === "trialEvaluated" && e.body.value.result) edit(e.body.value.result);
  }
  return events;
}

describe("report", () => {
  it("says whether the best trial's seeds trained together in one process, or apart and why", () => {
    const together = reportOf(withBestResult("together", (r) => (r.seedResults = [0, 1, 2].map((seed) => create(SeedResultSchema, { seed, seedsTogether: 3 }) as never))));
    expect(together.json.outcome.best_trial?.seeds_together).toBe(3);
    expect(unwrapped(together.markdown)).toContain("- Its seeds trained together, 3 in one process (stacked and vmapped, each with its own initialisation and data order)");
    const apart = reportOf(withBestResult("apart", (r) => (r.seedsApart = "vmap cannot run the model: RuntimeError: data-dependent control flow")));
    expect(apart.json.outcome.best_trial?.seeds_apart).toMatch(/^vmap cannot run/);
    expect(unwrapped(apart.markdown)).toContain("- Its seeds trained a process each: vmap cannot run the model: RuntimeError: data-dependent control flow");
    // A runner that never said (seeds apart on a CPU, or runs recorded before): nothing.
    const plain = reportOf(runEvents("plain"));
    expect(plain.json.outcome.best_trial?.seeds_together).toBeNull();
    expect(unwrapped(plain.markdown)).not.toContain("Its seeds trained");
  });

  it("says why the best trial is best, by the rule that picked it", () => {
    const { markdown, json } = reportOf(runEvents("why"));
    // Scores 0.917 and 0.914 with CI half-width 0.01 (fixtures), three seeds each.
    expect(json.outcome.best_trial_id).toBe(trialId("why", 9));
    expect(unwrapped(markdown)).toContain(
      `- Best by the run's rule, the highest 95% CI lower bound of the accepted trials with at least 2 seeds: 90.70% (3 seeds) against 90.40% (3 seeds) for the runner-up \`t003\`.`,
    );
  });

  it("ranks a one-seed probe below every multi-seed trial, and says so", () => {
    const events = runEvents("probe", TRIALS.slice(0, 1));
    const end = events.findIndex((e) => e.body.case === "runFinished");
    const { markdown, json } = reportOf([...events.slice(0, end), ...probe("probe", 50), events[end]!]);
    expect(json.outcome.best_trial_id).toBe(trialId("probe", 0));
    expect(json.outcome.why_best).toContain(`86.20% (3 seeds) against 95.00% (1 seed x 300 validation examples) for the runner-up \`${trialId("probe", 50)}\`; the runner-up is a one-seed probe`);
    expect(unwrapped(markdown)).toContain("| 1 x 300 |");
  });
});
