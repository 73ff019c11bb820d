/**
 * The planner's LLM brain: one proposal per call, validated by the same zod
 * schemas that define model_config and train_config, and then by the
 * compiler (shapes, parameter limit) and the run's history (no repeats):
 * every check is a zod issue, so the client feeds its exact text back to the
 * model for another attempt.
 */
import { describeSpace, outsideSpace, spaceOf } from "../../core/space.js";
import { z } from "zod";
import { SURFACE } from "../../core/enums.js";
import { argumentDefault, CodeModelSchema, isCodeModel, ModelConfigSchema, TrainConfigSchema, type TrialModel } from "../../core/model-config.js";
import { ArgumentKind } from "../../proto/gen/research/v1/runner_pb.js";
import type { LlmClient } from "../../core/llm/client.js";
import { boundOf, meanOf, type TrialState } from "../../swarm/trial-state.js";
import type { Prompt } from "../../swarm/prompts.js";
import type { Genome } from "./mutations.js";
import { configFingerprint, genomeOf, tried } from "./identity.js";
import { probeFidelity } from "./proposals.js";
import type { PlanInput, Proposal } from "./types.js";
import { PROBE_SEEDS } from "../../core/defaults.js";
import { brokenPromises } from "./promises.js";

/** The run's model source shown to the LLM, at most this long: an edit is asked of a model it can read. */
const MODEL_SOURCE_CHARS = 12_000;

const AssessmentSchema = z.object({
  progress: z.string().describe("how the run is going so far"),
  strengths: z.array(z.string()),
  weaknesses: z.array(z.string()),
});

/**
 * On a run from a model in Python the LLM edits that model: its constructor's arguments, and its
 * code, by a change in words (code_edit) that the coder's LLM makes. Where the code comes from is
 * the planner's to fill in, from the parent (childModel), never the LLM's.
 */
const CodeProposalSchema = CodeModelSchema.omit({ source_trial: true });

/** The proposal's model as the trial takes it: a code model continues its parent's code. */
function resolvedModel(input: PlanInput, model: TrialModel, parentIds: readonly string[]): TrialModel {
  const parent = parentIds[0] ? input.state.trials.get(parentIds[0]) : undefined;
  const from = parent && genomeOf(parent)?.model;
  return isCodeModel(model) && from && isCodeModel(from) && from.source_trial ? { ...model, source_trial: from.source_trial } : model;
}

function proposalSchema(input: PlanInput, index: number) {
  const seen = tried(input.state);
  const maxParams = Number(input.state.goal?.maxParams ?? 0n);
  const space = spaceOf(input.state.settings?.space);
  const start = input.state.start;
  const startClass = start?.code && isCodeModel(start.model) ? start.model.class_name : undefined;
  return z
    .object({
      hypothesis: z.string().min(10),
      rationale: z.string().min(10),
      surface: z.enum(SURFACE.names),
      parent_ids: z.array(z.string()).max(2).describe("trial ids this proposal edits; [] for a fresh start"),
      model_config: startClass ? CodeProposalSchema : ModelConfigSchema,
      train_config: TrainConfigSchema,
      assessment: AssessmentSchema,
    })
    .superRefine((p, ctx) => {
      for (const id of p.parent_ids) {
        const parent = input.state.trials.get(id);
        if (!parent) ctx.addIssue({ code: "custom", path: ["parent_ids"], message: `unknown trial id "${id}"` });
        // Its children build on the code its edit made, which must exist first.
        else if (parent.model && isCodeModel(parent.model) && parent.model.code_edit && !parent.assembled?.code) {
          ctx.addIssue({ code: "custom", path: ["parent_ids"], message: `trial "${id}" has not made its code edit yet: choose another parent` });
        }
      }
      if (startClass && isCodeModel(p.model_config) && p.model_config.class_name !== startClass) {
        ctx.addIssue({ code: "custom", path: ["model_config", "class_name"], message: `this run's model is class ${startClass}` });
      }
      const model = resolvedModel(input, p.model_config, p.parent_ids);
      const params = input.params(model);
      if (typeof params === "string") ctx.addIssue({ code: "custom", path: ["model_config"], message: params });
      else if (maxParams > 0 && params > maxParams) {
        ctx.addIssue({ code: "custom", path: ["model_config"], message: `${params} parameters exceed the limit of ${maxParams}` });
      }
      const outside = outsideSpace(space, p.train_config);
      if (outside) ctx.addIssue({ code: "custom", path: ["train_config"], message: outside });
      const fp = configFingerprint(model, p.train_config);
      if (seen.has(fp)) ctx.addIssue({ code: "custom", path: [], message: "this exact configuration was already tried in this run" });
      if (input.failedElsewhere.has(fp)) ctx.addIssue({ code: "custom", path: [], message: "this exact configuration failed in an earlier run" });
      // The planner's promises bind an LLM's proposal as they bind the built-in brain's: it must fit the time plan.
      for (const broken of brokenPromises(input, index, { kind: "propose", proposal: asProposal(input, p), by: "policy" })) {
        ctx.addIssue({ code: "custom", path: [], message: broken });
      }
    });
}

function trialLine(t: TrialState) {
  return {
    id: t.id,
    surface: t.proposed && SURFACE.name(t.proposed.surface),
    hypothesis: t.proposed?.hypothesis,
    parents: t.proposed?.parentIds,
    model_config: t.model,
    train_config: t.train,
    params: t.assembled?.summary ? Number(t.assembled.summary.totalParams) : undefined,
    [`${t.objective.key}_mean`]: meanOf(t),
    [`${t.objective.key}_ci_${t.objective.higherIsBetter ? "low" : "high"}`]: boundOf(t),
    eval_seconds: t.evaluated?.evalSeconds,
    failure: t.judged?.failure?.message ?? t.evaluated?.failure?.message,
    analysis: t.evaluated?.analysis?.notes,
  };
}

export function contextFor(input: PlanInput, index: number): string {
  const { state, info } = input;
  const trials = state.order.map((id) => state.trials.get(id)!).slice(-20);
  return JSON.stringify(
    {
      goal: {
        text: state.goal?.rawText,
        dataset: state.goal?.dataset,
        ...(state.goal?.openEnded
          ? { objective: `${state.objective.higherIsBetter ? "maximise" : "minimise"} validation ${state.objective.label} within the limits (no target)` }
          : { [`target_${state.objective.key}`]: state.goal?.target }),
        max_params: Number(state.goal?.maxParams ?? 0n),
        // What the person narrowed the search to: a proposal outside it is refused.
        ...(state.settings?.space && { search_space: describeSpace(spaceOf(state.settings.space)) }),
      },
      dataset: { input_shape: info.inputShape, input_dtype: info.inputDtype, num_classes: info.numClasses, n_train: info.nTrain, n_val: info.nVal },
      budgets: { trial_time_budget_s: state.settings?.trialTimeBudgetS, seeds_per_trial: state.settings?.seeds, max_trials: state.settings?.maxTrials },
      next_trial_index: index,
      ...(state.start?.code && {
        model_in_python: {
          source: state.start.code.source.slice(0, MODEL_SOURCE_CHARS),
          constructor_arguments: state.start.code.arguments.map((a) => ({ name: a.name, kind: ArgumentKind[a.kind].toLowerCase(), default: argumentDefault(a) })),
          parameters: state.start.code.params,
        },
      }),
      research_brief: state.briefs.flatMap((b) => b.architectural_suggestions.map((s) => ({ name: s.name, building_blocks: s.building_blocks, note: s.implementation_note }))),
      trials_so_far: trials.map(trialLine),
    },
    null,
    1,
  );
}

type LlmProposal = z.output<ReturnType<typeof proposalSchema>>;

/** The LLM's answer as the planner's proposal: a new config, probed at rung 0 (the scheduler decides fidelity). */
function asProposal(input: PlanInput, p: Omit<LlmProposal, "assessment"> & { assessment?: LlmProposal["assessment"] }): Proposal {
  const a = p.assessment;
  return {
    rung: 0,
    seeds: PROBE_SEEDS,
    hypothesis: p.hypothesis,
    rationale: a ? `${p.rationale}\nassessment: ${a.progress}; strengths: ${a.strengths.join(", ") || "-"}; weaknesses: ${a.weaknesses.join(", ") || "-"}` : p.rationale,
    parentIds: p.parent_ids,
    surface: p.surface,
    mutation: "llm",
    model: resolvedModel(input, p.model_config, p.parent_ids),
    train: { ...(p.train_config satisfies Genome["train"]), ...probeFidelity(input) },
  };
}

export async function proposeWithLlm(client: LlmClient, prompt: Prompt, input: PlanInput, index: number) {
  const r = await client.generateObject({
    role: "planner",
    schema: proposalSchema(input, index),
    schemaName: "trial_proposal",
    system: prompt.text,
    prompt: contextFor(input, index),
  });
  return { value: asProposal(input, r.value), usage: r.usage, attempts: r.attempts };
}
