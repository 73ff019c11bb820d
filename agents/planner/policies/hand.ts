/**
 * Proposals a person authored: one queued through an intervention (propose), and the run's
 * starting point (launch --from) as its first two trials.
 */
import { PROBE_SEEDS } from "../../../core/defaults.js";
import { trialId } from "../../../core/ids.js";
import type { HandProposal } from "../../../swarm/run-state.js";
import { isBaseline, rungOf } from "../../../swarm/trial-state.js";
import { ladder } from "../scheduler.js";
import type { PlanInput, Proposal } from "../types.js";
import { memoryFormat, probeFidelity, startingTrain } from "../proposals.js";

/**
 * A person's queued proposal as the planner's: their model, and their
 * training on top of the run's probe fidelity. The coder builds it like any
 * other.
 */
export function handProposal(input: PlanInput, queued: HandProposal): Proposal {
  const { intervention: v, model, train } = queued;
  return {
    rung: 0,
    hypothesis: v.hypothesis,
    rationale: `proposed by ${v.who}${v.reason ? `: ${v.reason}` : ""}`,
    parentIds: v.parentIds,
    surface: undefined,
    mutation: "hand",
    model,
    train: { ...startingTrain(input), ...train },
    interventionId: v.interventionId,
  };
}

/**
 * The run's starting point (launch --from) as its first two trials, or the one of them not yet
 * proposed: trial 0 on its own recipe with the run's seeds, at the ladder's top rung (a full
 * training, never promoted: what every later trial is measured against), then the same config
 * at the probe's fidelity with one seed, the rung-0 anchor its edits are compared with at the
 * same fidelity. None for a run started from templates, or once both are in.
 */
export function baselineProposals(input: PlanInput): Proposal[] {
  const { state } = input;
  const start = state.start;
  if (!start) return [];
  const probe = probeFidelity(input);
  const baselineId = trialId(state.runId, 0);
  const proposed = [...state.trials.values()].filter(isBaseline);
  const name = start.model.name;
  const out: Proposal[] = [
    {
      rung: ladder(input.info, probe).length - 1,
      hypothesis: `the starting point, ${name} from ${start.origin}, on its own recipe`,
      rationale: "trial 0: the baseline every later trial is measured against, with the run's seeds",
      parentIds: [],
      mutation: "baseline",
      model: start.model,
      train: start.train,
    },
    {
      rung: 0,
      seeds: PROBE_SEEDS,
      hypothesis: `${name} at the search's probe fidelity (${probe.subset || "all"} examples, ${probe.epochs} epochs)`,
      rationale: "the starting point's rung-0 anchor: its edits are compared with it at the same fidelity",
      parentIds: [baselineId],
      mutation: "baseline",
      model: start.model,
      train: { ...start.train, subset: probe.subset, epochs: probe.epochs, ...memoryFormat(input) },
    },
  ];
  return out.filter((p) => !proposed.some((t) => rungOf(t) === p.rung));
}
