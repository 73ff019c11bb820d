/**
 * The coder (assembler): model_config -> PyTorch source with the built-in
 * compiler (or a person's own model in Python with the trial's constructor
 * arguments), checked by the runner's Summarize (a real forward pass in the
 * sandbox), diffed against the parent's code, and packaged with the full
 * evaluation request so the analyst needs nothing else.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { agentConfig } from "../../core/config.js";
import { DEFAULT_SEEDS } from "../../core/defaults.js";
import { ResearchError } from "../../core/failure.js";
import { recipeOf } from "../../core/recipe.js";
import type { Event, TrialAssembledSchema } from "../../proto/gen/research/v1/events_pb.js";
import { EvaluateRequestSchema, ModelSourceSchema, type DatasetInfo, type ModelSource, type SummarizeResponse } from "../../proto/gen/research/v1/runner_pb.js";
import { isCodeModel, type CodeModel, type ModelConfig } from "../../core/model-config.js";
import { datasetInfo, datasetSpec, summaryInput } from "../../swarm/dataset-info.js";
import { compileOptions } from "../../core/compiler/options.js";
import { trialBudget } from "../../swarm/budget.js";
import { baselineTrial, firstSeed, type RunState } from "../../swarm/run-state.js";
import type { TrialState } from "../../swarm/trial-state.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import { askLlm } from "../../swarm/llm.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { compileModel } from "../../core/compiler/compile.js";
import { unifiedDiff } from "../../core/diff.js";
import { builtinNarrative, narrateSummary, writeWithRepair } from "./llm-coder.js";
import { trialDir } from "./tools.js";
import { kwargsMessage } from "../../core/config-wire.js";

const CODER_PROMPT = loadPrompt("coder");
const EDIT_PROMPT = loadPrompt("coder-edit");
const SUMMARY_PROMPT = loadPrompt("summary");
const { workspace: WORKSPACE } = agentConfig();

type Assembled = MessageInitShape<typeof TrialAssembledSchema>;

/** A trial's model as the runner builds it: its source, class and constructor arguments, and who wrote the source. */
interface Source {
  model: ModelSource;
  author: string;
  /** Set when the runner already summarised this exact source (the LLM coder's checks). */
  summary?: SummarizeResponse;
  /** The code a model in Python was made from (its edit's base): its parent's, whether or not the parent is assembled yet. */
  base?: string;
}

/**
 * A model in Python: the run's source (launch --from model.py), or the code an earlier trial's
 * edit made (source_trial), built with the trial's arguments. A trial with a code_edit has the
 * coder's LLM make it, checked by the runner before it trains; the built-in brain edits no code,
 * so without an LLM, or when its last round still fails, the trial is labelled codegen_error.
 */
async function codeSource(state: RunState, t: TrialState, model: CodeModel, info: DatasetInfo, ctx: AgentContext): Promise<Source | ResearchError> {
  const start = state.start?.code;
  if (!start) return new ResearchError("invalid_config", `model_config names class ${model.class_name}, but this run started from no model in Python`);
  const from = model.source_trial ? state.trials.get(model.source_trial)?.assembled : undefined;
  if (model.source_trial && !from?.code) return new ResearchError("invalid_config", `model_config takes its code from ${model.source_trial}, which has none`);
  const base = from ? { code: from.code, author: from.author } : { code: start.source, author: `person:${state.start!.origin}` };
  const source = (code: string) => create(ModelSourceSchema, { code, className: model.class_name, initKwargs: kwargsMessage(model.init_kwargs) });
  const edit = model.code_edit;
  if (!edit) return { model: source(base.code), author: base.author, base: base.code };
  const written = await askLlm<{ code: string; summary: SummarizeResponse } | undefined>(ctx, { runId: state.runId, trialId: t.id }, {
    role: "coder",
    purpose: "code-edit",
    prompt: EDIT_PROMPT,
    ask: (client) =>
      writeWithRepair({
        client,
        prompt: EDIT_PROMPT,
        runner: ctx.runner(),
        task: { source: base.code, initKwargs: model.init_kwargs, edit },
        className: model.class_name,
        info,
        maxParams: Number(state.goal?.maxParams ?? 0n),
        workDir: trialDir(WORKSPACE, state.runId, t.id),
      }),
    builtin: () => undefined,
  });
  if (!written.value) {
    return new ResearchError("codegen_error", written.fallbackReason ? `the code edit was not made: ${written.fallbackReason}` : "a code edit needs an LLM for the coder (--llm): the built-in brain edits no code");
  }
  return { model: source(written.value.code), author: `llm:${written.model}`, summary: written.value.summary, base: base.code };
}

/** A model_config compiled to PyTorch; an LLM may write its own code instead, checked by the runner. */
async function compiledSource(state: RunState, t: TrialState, model: ModelConfig, info: DatasetInfo, ctx: AgentContext): Promise<Source | ResearchError> {
  const compiled = compileModel(model, compileOptions(info));
  if (!compiled.ok) return new ResearchError(compiled.label, compiled.error);
  const runner = ctx.runner();
  // The compiler's code is the reference and the fallback.
  const written = await askLlm<{ code: string; summary?: SummarizeResponse }>(ctx, { runId: state.runId, trialId: t.id }, {
    role: "coder",
    purpose: "codegen",
    prompt: CODER_PROMPT,
    ask: (client) =>
      writeWithRepair({
        client,
        prompt: CODER_PROMPT,
        runner,
        task: { modelConfig: model },
        className: compiled.className,
        info,
        maxParams: Number(state.goal?.maxParams ?? 0n),
        workDir: trialDir(WORKSPACE, state.runId, t.id),
      }),
    builtin: () => ({ code: compiled.code, summary: undefined }),
  });
  return {
    model: create(ModelSourceSchema, { code: written.value.code, className: compiled.className }),
    author: written.model ? `llm:${written.model}` : "compiler",
    summary: written.value.summary,
  };
}

async function assemble(state: RunState, t: TrialState, info: DatasetInfo, ctx: AgentContext): Promise<Assembled> {
  const { id, model, train } = t;
  const p = t.proposed!;
  if (!model || !train) return { failure: new ResearchError("invalid_config", t.configError ?? "no model_config").toProto() };
  const source = isCodeModel(model) ? await codeSource(state, t, model, info, ctx) : await compiledSource(state, t, model, info, ctx);
  if (source instanceof ResearchError) return { failure: source.toProto() };

  const runner = ctx.runner();
  const ids = { runId: state.runId, trialId: id };
  const { code, className } = source.model;
  const summary =
    source.summary ??
    (await runner
      .summarize({ model: source.model, ...summaryInput(info) })
      .catch((err: unknown) => {
        throw new ResearchError("runner_unavailable", `summarize: ${(err as Error).message}`);
      }));
  // Against the parent's code: as assembled, or, for a parent still being assembled (a proposal
  // may name one in flight), the code this trial's was made from.
  const parentCode = p.parentIds[0] ? (state.trials.get(p.parentIds[0])?.assembled?.code ?? source.base) : undefined;
  const assembled: Assembled = {
    code,
    className,
    diff: parentCode !== undefined ? unifiedDiff(parentCode, code, `${p.parentIds[0]}/model_code.py`, `${id}/model_code.py`) : "",
    summary,
    failure: summary.failure,
    author: source.author,
  };
  if (summary.failure) return assembled;
  assembled.summaryNarrative = (
    await askLlm(ctx, ids, {
      role: "summary",
      purpose: "summary-narrative",
      prompt: SUMMARY_PROMPT,
      ask: (client) => narrateSummary(client, SUMMARY_PROMPT, summary, className),
      builtin: () => builtinNarrative(summary, className),
    })
  ).value;
  const goal = state.goal;
  const settings = state.settings;
  assembled.request = create(EvaluateRequestSchema, {
    trialId: id,
    runId: state.runId,
    model: source.model,
    dataset: { ...datasetSpec(goal), subset: train.subset },
    recipe: recipeOf(train),
    seeds: p.seeds || settings?.seeds || DEFAULT_SEEDS,
    // Every trial of a run sees the same seeds (comparisons are matched); another --seed, others.
    baseSeed: firstSeed(settings),
    target: goal?.target ?? 0,
    metric: goal?.objective,
    // The last long training's seeds all end before the run's reserve, a late one training less.
    budget: trialBudget(state, t, Date.now()),
    // ...and start at once, sharing the cores, when the planner timed them so.
    seedsAtOnce: t.proposed?.seedsAtOnce ?? false,
    // A continued training starts each seed from kept weights (promotion.ts continuation).
    initWeights: t.proposed?.initWeights,
    // Trial 0 of a run started from a person's model is also scored on the test split, once: the
    // report's comparison of the best model with it (never read by the search, which decides on
    // validation alone). The runner keeps weights of a run's best few, which trial 0 seldom stays.
    evaluateTest: t.id === baselineTrial(state)?.id,
    // The runner keeps the run's best trials' weights: the test confirmation evaluates them instead of training again.
    keepWeights: true,
    // Every evaluated model's latency is measured where it ran: a goal may limit it or trade it off.
    measureInference: true,
    // A redelivered or duplicated evaluation of this trial joins the one running (gpu-runner/flights.ts).
    idempotencyKey: `${state.runId}/${t.id}`,
  });
  return assembled;
}

async function handleProposed(event: Event, ctx: AgentContext): Promise<void> {
  const state = await ctx.runState(event.runId);
  const trial = state.trials.get(event.trialId);
  if (state.finished || !trial?.proposed || trial.assembled) return;
  const info = await datasetInfo(ctx.runner(), state.goal);
  const value = await assemble(state, trial, info, ctx);
  await ctx.emit(`${event.trialId}/assembled`, { runId: event.runId, trialId: event.trialId, body: { case: "trialAssembled", value } });
  ctx.log.info({ ok: !value.failure, params: value.summary?.totalParams?.toString() }, "trial assembled");
}

await runAgent({
  role: "coder",
  kinds: ["trialProposed"],
  // An LLM coder's rounds take a while; two trials can be written at once.
  concurrency: 2,
  handle: async (event, ctx) => {
    if (event.body.case === "trialProposed") await handleProposed(event, ctx);
  },
  onDeadLetter: async (event, err, ctx) => {
    await ctx.emit(`${event.trialId}/assembled`, {
      runId: event.runId,
      trialId: event.trialId,
      body: { case: "trialAssembled", value: { failure: ResearchError.from(err, "runner_unavailable").toProto() } },
    });
  },
});
