/**
 * What a person can do to a run while it goes on (the CLI's pause, resume,
 * stop, cancel and propose; the dashboard's buttons): a request checked
 * against the run's state and turned into one Intervention event. The agents
 * act on the event (planner: pause, resume, queued proposals; analyst:
 * cancellations; judge: the stop), and the lineage keeps it with who did it.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { INTERVENTION_KIND } from "../core/enums.js";
import { authoredModelConfig, authoredTrainConfig, decodeText } from "../core/model-config.js";
import type { EventInit } from "../bus/index.js";
import type { RunState } from "./run-state.js";
import { trialStatus } from "./trial-state.js";
import { modelSpec, trainSpec } from "../core/config-wire.js";

/** A request as people and the dashboard's API write it (snake_case, configs as JSON values or text). */
export const InterventionRequestSchema = z.strictObject({
  kind: z.enum(INTERVENTION_KIND.names),
  reason: z.string().max(2000).optional(),
  /** cancel_trial: the trial; a short id ("t007") is completed with the run's. */
  trial_id: z.string().max(200).optional(),
  /** propose: */
  hypothesis: z.string().max(4000).optional(),
  model_config: z.unknown().optional(),
  train_config: z.unknown().optional(),
  parent_ids: z.array(z.string().max(200)).max(8).optional(),
});
export type InterventionRequest = z.input<typeof InterventionRequestSchema>;

export type InterventionCheck = { ok: true; event: EventInit; summary: string } | { ok: false; error: string };

const fail = (error: string): InterventionCheck => ({ ok: false, error });

function fullTrialId(state: RunState, id: string): string {
  return state.trials.has(id) ? id : `${state.runId}-${id}`;
}

/** A config given as a value, or as JSON or YAML text (the CLI's files). */
function decoded(v: unknown, what: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (typeof v !== "string") return { ok: true, value: v };
  const text = decodeText(v);
  return text.ok ? text : { ok: false, error: `${what}: ${text.error}` };
}

/**
 * The event for `request` on the run `state` by `who`, or why it cannot be
 * done (one line). Pure apart from the random id, so every rule is testable.
 */
export function interventionEvent(state: RunState, request: unknown, who: string): InterventionCheck {
  const parsed = InterventionRequestSchema.safeParse(request);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return fail(`${issue.path.join(".") || "request"}: ${issue.message}`);
  }
  const r = parsed.data;
  if (!state.goal) return fail(`no run ${state.runId} in this swarm`);
  if (state.finished) return fail(`run ${state.runId} has finished`);
  if (state.stopRequested) return fail(`run ${state.runId} is stopping (stopped by ${state.stopRequested.who})`);
  const id = `iv-${randomBytes(4).toString("hex")}`;
  let trialId = "";
  let summary: string;
  const body = { interventionId: id, kind: INTERVENTION_KIND.value(r.kind)!, who, reason: r.reason ?? "", hypothesis: "", parentIds: [] as string[] };
  switch (r.kind) {
    case "pause":
      if (state.paused) return fail(`run ${state.runId} is already paused`);
      summary = `paused run ${state.runId}: trials in flight go on, nothing new starts (the time budget still runs)`;
      break;
    case "resume":
      if (!state.paused) return fail(`run ${state.runId} is not paused`);
      summary = `resumed run ${state.runId}`;
      break;
    case "stop":
      summary = `stopping run ${state.runId}: trials in flight are cancelled, the best is confirmed on the test split, then the report`;
      break;
    case "cancel_trial": {
      if (!r.trial_id) return fail("cancel_trial needs a trial_id");
      trialId = fullTrialId(state, r.trial_id);
      const t = state.trials.get(trialId);
      if (!t?.proposed) return fail(`no trial ${r.trial_id} in run ${state.runId}`);
      if (t.evaluated || t.judged) return fail(`trial ${trialId} has already been evaluated (${trialStatus(t)})`);
      if (state.cancelled.has(trialId)) return fail(`trial ${trialId} is already cancelled`);
      summary = `cancelling trial ${trialId}`;
      break;
    }
    case "propose": {
      if (!r.hypothesis?.trim()) return fail("propose needs a hypothesis");
      if (r.model_config === undefined) return fail("propose needs a model_config");
      const model = decoded(r.model_config, "model_config");
      if (!model.ok) return fail(model.error);
      const checked = authoredModelConfig(model.value);
      if (!checked.ok) return fail(checked.error);
      const train = r.train_config === undefined ? undefined : decoded(r.train_config, "train_config");
      if (train && !train.ok) return fail(train.error);
      const trainChecked = train && authoredTrainConfig(train.value);
      if (trainChecked && !trainChecked.ok) return fail(trainChecked.error);
      const parents = (r.parent_ids ?? []).map((p) => fullTrialId(state, p));
      const missing = parents.find((p) => !state.trials.has(p));
      if (missing) return fail(`no parent trial ${missing} in run ${state.runId}`);
      // As written, not as parsed: the planner lays the person's training over the run's probe fidelity.
      Object.assign(body, {
        hypothesis: r.hypothesis.trim(),
        model: modelSpec(checked.value),
        train: trainChecked && trainSpec(trainChecked.value),
        parentIds: parents,
      });
      summary = `queued a proposal for run ${state.runId}: the planner takes it at the next free slot`;
      break;
    }
  }
  return { ok: true, summary, event: { runId: state.runId, trialId, eventId: `${state.runId}/${id}`, body: { case: "runIntervention", value: body } } };
}
