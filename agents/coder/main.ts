/**
 * The coder (assembler): model_config -> PyTorch source with the built-in
 * compiler, checked by the runner's Summarize (a real forward pass in the
 * sandbox), diffed against the parent's code, and packaged with the full
 * evaluation request so the analyst needs nothing else.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { agentConfig } from "../../core/config.js";
import { DEFAULT_SEEDS } from "../../core/defaults.js";
import { ResearchError } from "../../core/failure.js";
import { recipeOf } from "../../core/recipe.js";
import type { Event, TrialAssembledSchema } from "../../proto/gen/research/v1/events_pb.js";
import { EvaluateRequestSchema, type DatasetInfo, type SummarizeResponse } from "../../proto/gen/research/v1/runner_pb.js";
import { compileOptions, datasetInfo, datasetSpec } from "../../swarm/dataset-info.js";
import { baselineTrial, type RunState, type TrialState } from "../../swarm/run-state.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import { askLlm } from "../../swarm/llm.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { compileModel } from "../../core/compiler/compile.js";
import { unifiedDiff } from "../../core/diff.js";
import { builtinNarrative, codegenWithRepair, narrateSummary } from "./llm-coder.js";
import { trialDir } from "./tools.js";

const CODER_PROMPT = loadPrompt("coder");
const SUMMARY_PROMPT = loadPrompt("summary");
const { workspace: WORKSPACE } = agentConfig();

type Assembled = MessageInitShape<typeof TrialAssembledSchema>;

async function assemble(state: RunState, t: TrialState, info: DatasetInfo, ctx: AgentContext): Promise<Assembled> {
  const { id, model, train } = t;
  const p = t.proposed!;
  if (!model || !train) return { failure: new ResearchError("invalid_config", t.configError ?? "no model_config").toProto() };
  const compiled = compileModel(model, compileOptions(info));
  if (!compiled.ok) return { failure: new ResearchError(compiled.label, compiled.error).toProto() };

  const runner = ctx.runner();
  const ids = { runId: state.runId, trialId: id };
  // The compiler's code is the reference and the fallback; an LLM may write its own, checked by the runner.
  const written = await askLlm<{ code: string; summary?: SummarizeResponse }>(ctx, ids, {
    role: "coder",
    purpose: "codegen",
    prompt: CODER_PROMPT,
    ask: (client) =>
      codegenWithRepair({
        client,
        prompt: CODER_PROMPT,
        runner,
        modelConfig: model,
        className: compiled.className,
        info,
        maxParams: Number(state.goal?.maxParams ?? 0n),
        workDir: trialDir(WORKSPACE, state.runId, id),
      }),
    builtin: () => ({ code: compiled.code, summary: undefined }),
  });
  const code = written.value.code;
  const summary =
    written.value.summary ??
    (await runner
      .summarize({ model: { code, className: compiled.className }, inputShape: info.inputShape, numClasses: info.numClasses, inputDtype: info.inputDtype })
      .catch((err: unknown) => {
        throw new ResearchError("runner_unavailable", `summarize: ${(err as Error).message}`);
      }));
  const parent = p.parentIds[0] ? state.trials.get(p.parentIds[0])?.assembled : undefined;
  const assembled: Assembled = {
    code,
    className: compiled.className,
    diff: parent ? unifiedDiff(parent.code, code, `${p.parentIds[0]}/model_code.py`, `${id}/model_code.py`) : "",
    summary,
    failure: summary.failure,
    author: written.model ? `llm:${written.model}` : "compiler",
  };
  if (summary.failure) return assembled;
  assembled.summaryNarrative = (
    await askLlm(ctx, ids, {
      role: "summary",
      purpose: "summary-narrative",
      prompt: SUMMARY_PROMPT,
      ask: (client) => narrateSummary(client, SUMMARY_PROMPT, summary, compiled.className),
      builtin: () => builtinNarrative(summary, compiled.className),
    })
  ).value;
  const goal = state.goal;
  const settings = state.settings;
  assembled.request = create(EvaluateRequestSchema, {
    trialId: id,
    runId: state.runId,
    model: { code, className: compiled.className },
    dataset: { ...datasetSpec(goal), subset: train.subset },
    recipe: recipeOf(train),
    seeds: p.seeds || settings?.seeds || DEFAULT_SEEDS,
    // Every trial of a run sees the same seeds: comparisons are matched.
    baseSeed: 0,
    target: goal?.target ?? 0,
    budget: { maxParams: goal?.maxParams ?? 0n, timeBudgetS: settings?.trialTimeBudgetS ?? 0 },
    // Trial 0 of a run started from a person's model is also scored on the test split, once: the
    // report's comparison of the best model with it (never read by the search, which decides on
    // validation alone). The runner keeps weights of a run's best few, which trial 0 seldom stays.
    evaluateTest: t.id === baselineTrial(state)?.id,
    // The runner keeps the run's best trials' weights: the test confirmation evaluates them instead of training again.
    keepWeights: true,
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
