/** When a recipe surface has stopped paying off, so the planner asks the researcher a narrower question. */
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { judgedTrials, type RunState, type TrialState } from "../../swarm/run-state.js";

/** Trials on one surface, judged in a row, that gained nothing: enough to ask a narrower question. */
export const STALL_TRIALS = 3;

export function stalledOn(state: RunState, judged: TrialState): TrialState[] | undefined {
  const surface = judged.proposed?.surface;
  if (!surface) return undefined;
  const recent = judgedTrials(state)
    .filter((t) => t.proposed?.surface === surface && t.proposed.parentIds.length > 0)
    .sort((a, b) => a.judgedPosition! - b.judgedPosition!)
    .slice(-STALL_TRIALS);
  if (recent.length < STALL_TRIALS || recent[recent.length - 1]!.id !== judged.id) return undefined;
  if (recent.some((t) => t.judged?.verdict === Verdict.ACCEPT && (t.judged.gain ?? 0) > 1e-3)) return undefined;
  // One question per stall: none if an earlier request already covered one of these trials.
  if (state.researchRequests.some((r) => r.surface === surface && recent.some((t) => r.trialIds.includes(t.id)))) return undefined;
  return recent;
}

