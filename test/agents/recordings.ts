/**
 * Recorded runs (test/fixtures/runs) as the planner saw them: each decision point of a run (a
 * judgement that freed a slot) with the run's state folded up to it, on the run's own clock or
 * on a clock scaled as if the machine were faster or slower.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { clone, create, fromJsonString } from "@bufbuild/protobuf";
import { Decision, EventSchema, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { DatasetInfoSchema, type DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { trialId } from "../../core/ids.js";
import { applyToRunState, emptyRunState, type RunState } from "../../swarm/run-state.js";
import { planInputFor } from "../../agents/planner/proposals.js";
import type { PlanInput } from "../../agents/planner/types.js";
import type { SearchDevice } from "../../core/defaults.js";
import { trainSent, trainSpec } from "../../core/config-wire.js";
import type { TrainConfigInput } from "../../core/model-config.js";

const DIR = join(import.meta.dirname, "..", "fixtures", "runs");

export interface Recording {
  file: string;
  run: string;
  slots: number;
  device: SearchDevice;
  /** Whether the moves the run made keep the planner's promises as they are stated now. */
  recordedMovesKeepPromises: boolean;
  /** What the run-level promises say of the run as it ended (promises.ts runPromiseBreaks), each a prefix. */
  runBreaks: string[];
}

export const RECORDINGS: Recording[] = JSON.parse(readFileSync(join(DIR, "recordings.json"), "utf8"));

/** Fashion-MNIST as the runner splits it by default: the dataset of the recordings made before a run recorded its own (RunStarted.dataset). */
export const FASHION: DatasetInfo = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000, nTest: 10000, task: 1 });

export function events(r: Recording): Event[] {
  return readFileSync(join(DIR, r.file), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => fromJsonString(EventSchema, line));
}

/**
 * The same run on a machine `factor` times as slow: every moment after the start and every
 * measured or planned duration scaled, the budget as it was.
 */
export function scaled(evs: Event[], factor: number): Event[] {
  const t0 = evs[0]!.emittedAtMs;
  return evs.map((e) => {
    const c = clone(EventSchema, e);
    c.emittedAtMs = t0 + BigInt(Math.round(Number(e.emittedAtMs - t0) * factor));
    const b = c.body;
    if (b.case === "trialEvaluated") {
      b.value.evalSeconds *= factor;
      const r = b.value.result;
      if (r) {
        r.seconds *= factor;
        for (const s of r.seedResults) {
          s.seconds *= factor;
          s.secondsToFirstStep *= factor;
        }
      }
    } else if (b.case === "trialProposed") {
      const train = trainSent(b.value) as TrainConfigInput;
      if (train.train_seconds) {
        b.value.train = trainSpec({ ...train, train_seconds: Math.round(train.train_seconds * factor) });
        b.value.trainConfigJson = "";
      }
    }
    return c;
  });
}

export interface DecisionPoint {
  /** The state right after the judgement, on the judgement's clock. */
  input: PlanInput;
  index: number;
  /** What the run itself proposed for that slot, if it did. */
  recorded?: Event;
}

/** Every judgement the planner answered (decision ITERATE), with the state as it stood then. */
export function decisionPoints(r: Recording, evs: Event[]): DecisionPoint[] {
  let state: RunState = emptyRunState(evs[0]!.runId);
  const proposals = new Map(evs.filter((e) => e.body.case === "trialProposed").map((e) => [e.trialId, e]));
  const out: DecisionPoint[] = [];
  for (const e of evs) {
    state = applyToRunState(state, e);
    if (e.body.case !== "trialJudged" || e.body.value.decision !== Decision.ITERATE) continue;
    const index = (state.settings?.parallel || 1) + state.trials.get(e.trialId)!.judgedPosition!;
    // A snapshot: later events must not reach the state this decision saw.
    const snapshot = foldTo(evs, e);
    const input = planInputFor(snapshot, snapshot.dataset ?? FASHION, index, { nowMs: Number(e.emittedAtMs), slots: r.slots, device: r.device, pastObservations: [] });
    out.push({ input, index, recorded: proposals.get(trialId(state.runId, index)) });
  }
  return out;
}

function foldTo(evs: Event[], last: Event): RunState {
  let state = emptyRunState(last.runId);
  for (const e of evs) {
    state = applyToRunState(state, e);
    if (e === last) break;
  }
  return state;
}

/** The run's state at its end. */
export function finalState(evs: Event[]): RunState {
  return foldTo(evs, evs[evs.length - 1]!);
}
