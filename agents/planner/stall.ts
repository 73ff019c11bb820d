/** When a recipe surface has stopped paying off, so the planner asks the researcher a narrower question. */
import { MUTATION, SURFACE } from "../../core/enums.js";
import { labelName } from "../../core/failure.js";
import { Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { judgedTrials, type RunState } from "../../swarm/run-state.js";
import type { TrialState } from "../../swarm/trial-state.js";
import { MUTATIONS } from "./mutations.js";

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

/**
 * What a trial tried, in words for the researcher: a built-in edit's
 * description, found by its Mutation (rewording a hypothesis changes
 * nothing); an authored proposal's (a promotion, an LLM's) hypothesis whole.
 */
function whatItTried(t: TrialState): string {
  const name = t.proposed && MUTATION.name(t.proposed.mutation);
  return MUTATIONS.find((m) => m.name === name)?.describe ?? t.proposed?.hypothesis ?? "";
}

/** The narrower question for the `stalled` trials' surface: what they tried, and how they failed if they did. */
export function stallQuery(state: RunState, stalled: TrialState[]): string {
  const name = SURFACE.name(stalled[0]?.proposed?.surface ?? Surface.UNSPECIFIED);
  const failures = [...new Set(stalled.map((t) => t.judged?.failure).filter((f) => f).map((f) => labelName(f!.label)))];
  const tried = stalled.map(whatItTried).join("; ");
  return failures.length
    ? `why did ${tried} fail (${failures.join(", ")}) for ${name} on ${state.goal?.dataset}; ${name} techniques that avoid it`
    : `${name} techniques for small models on ${state.goal?.dataset} beyond ${tried}`;
}
