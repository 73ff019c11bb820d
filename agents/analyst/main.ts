/**
 * The analyst: runs each assembled trial on a GPU runner over gRPC, streams
 * its per-epoch progress live on core NATS, stops it early when its curve
 * falls clearly below its rung's or the run stops (evaluation.ts), and
 * publishes the evaluation with an analysis.
 */
import { failure, labelName, ResearchError } from "../../core/failure.js";
import { cancelledBy } from "../../swarm/run-state.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Event, TrialAssembled, TrialEvaluatedSchema } from "../../proto/gen/research/v1/events_pb.js";
import { answers, endedByRunner } from "../../gpu-runner/client.js";
import { askLlm } from "../../swarm/llm.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { analyse, statsForNarrative } from "./analysis.js";
import { watchedEvaluation } from "./evaluation.js";

const PROMPT = loadPrompt("analyst");

async function evaluateTrial(event: Event, assembled: TrialAssembled, ctx: AgentContext): Promise<void> {
  const { runId, trialId } = event;
  const state = await ctx.runState(runId);
  if (state.finished || state.trials.get(trialId)?.evaluated) return;
  const publishEvaluated = (value: MessageInitShape<typeof TrialEvaluatedSchema>) =>
    ctx.emit(`${trialId}/evaluated`, { runId, trialId, body: { case: "trialEvaluated", value } });

  if (assembled.failure || !assembled.request) {
    await publishEvaluated({ failure: assembled.failure });
    return;
  }
  const cancelled = cancelledBy(state, trialId);
  if (cancelled) {
    await publishEvaluated({ failure: failure("cancelled", cancelled) });
    return;
  }
  const t0 = Date.now();
  const trial = state.trials.get(trialId);
  if (!trial) return;
  // A duplicate or redelivered request goes where the first went: that runner trains it once.
  const key = assembled.request.idempotencyKey;
  const runner = key ? await ctx.runnerFor(key) : { client: ctx.runner(), instance: "", release: async () => {} };
  // The runner process the lease named: one restarted since refuses to start the key afresh.
  const request = { ...assembled.request, runnerInstance: runner.instance };
  try {
    // The random baseline searches without a scheduler: no pruning.
    const watch = { state, trial, prune: state.settings?.planner !== "random" };
    const evaluation = await watchedEvaluation(runner.client, request, watch, (progress) =>
      ctx.bus.publishLive({ runId, trialId, body: { case: "trialProgress", value: { progress } } }),
    );
    if (evaluation.stopped) {
      ctx.log.info({ label: labelName(evaluation.stopped.label), reason: evaluation.stopped.message }, "trial stopped early");
      await publishEvaluated({ failure: evaluation.stopped, result: evaluation.partial, evalSeconds: (Date.now() - t0) / 1000 });
      return;
    }
    const result = evaluation.result;
    ctx.log.info({ val_accuracy: result.aggregated.val_accuracy?.mean, seconds: result.seconds }, "trial evaluated");
    const evalSeconds = (Date.now() - t0) / 1000;
    const analysis = analyse(result);
    analysis.narrative = (
      await askLlm(ctx, { runId, trialId }, {
        role: "analyst",
        purpose: "narrative",
        prompt: PROMPT,
        ask: async (client) => {
          const r = await client.generateText({ role: "analyst", system: PROMPT.text, prompt: JSON.stringify(statsForNarrative(result)) });
          return { value: r.text.trim(), usage: r.usage, attempts: 1 };
        },
        builtin: () => analysis.notes.join(" "),
      })
    ).value;
    await publishEvaluated({ result, analysis, evalSeconds });
  } catch (err) {
    const e = ResearchError.from(err);
    if (e.label === "runner_unavailable") {
      // The runner ended it with this failure, or is gone: the redelivery may take another. A call
      // that broke while its runner still answers may have left it training there: the
      // redelivery goes back and joins it (gpu-runner/flights.ts), so that nothing trains twice.
      if (endedByRunner(e) || !(await answers(runner.client))) await runner.release().catch(() => undefined);
      else ctx.log.warn({ err: e.message }, "the call to the runner broke while it still answers: the redelivery rejoins it there");
      throw e;
    }
    ctx.log.info({ label: e.label, message: e.message }, "trial failed");
    await publishEvaluated({ failure: e.toProto(), evalSeconds: (Date.now() - t0) / 1000 });
  }
}

await runAgent({
  role: "analyst",
  kinds: ["trialAssembled"],
  // Evaluations take minutes; the bus keeps the message alive while they run.
  ackWaitMs: 60_000,
  // Trials in flight evaluate side by side; the runner's slots and queue do the pacing.
  concurrency: 4,
  handle: async (event, ctx) => {
    if (event.body.case === "trialAssembled") await evaluateTrial(event, event.body.value, ctx);
  },
  onDeadLetter: async (event, err, ctx) => {
    const e = ResearchError.from(err, "runner_unavailable");
    await ctx.emit(`${event.trialId}/evaluated`, {
      runId: event.runId,
      trialId: event.trialId,
      body: { case: "trialEvaluated", value: { failure: e.toProto() } },
    });
  },
});
