/**
 * The judge: legality, verdict and decision for every evaluated trial; when
 * the run ends (goal met on the CI lower bound, or a stop rule), one
 * confirmation of the best trial on the held-out test split, then RunFinished.
 */
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Decision, InterventionKind, RunEnd, TrialJudgedSchema, type Event, type TrialJudged } from "../../proto/gen/research/v1/events_pb.js";
import { bestTrial, doneBy, inFlight, isTerminal, liveSeconds, type RunState } from "../../swarm/run-state.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import { confirmFront, confirmOnTest } from "./confirm.js";
import { judge, runStatus } from "./rules.js";

function runDir(state: RunState): string {
  return join(state.settings?.workspace ?? ".", "runs", state.runId);
}

async function finishRun(state: RunState, last: TrialJudged, ctx: AgentContext): Promise<void> {
  const best = bestTrial(state);
  const confirmation = await confirmOnTest(state, ctx.runners(), ctx.log, Date.now());
  const frontTests = await confirmFront(state, ctx.runners(), ctx.log, Date.now());
  const dir = runDir(state);
  const status = runStatus(state, last);
  await ctx.emit("finished", {
    runId: state.runId,
    body: {
      case: "runFinished",
      value: {
        status,
        bestTrialId: best?.id ?? "",
        reportPath: join(dir, "report.md"),
        registryPath: join(dir, "experiments", "registry.json"),
        testResult: confirmation?.result,
        testSkipped: confirmation?.skipped ?? "",
        frontTests,
        trials: state.judgedCount,
        seconds: liveSeconds(state, Date.now()),
        reason: last.runReason,
        runEnd: last.runEnd,
      },
    },
  });
  ctx.log.info({ status, best: best?.id }, "run finished");
}

async function judgeTrial(event: Event, ctx: AgentContext): Promise<void> {
  const state = await ctx.runState(event.runId);
  const t = state.trials.get(event.trialId);
  if (state.finished || !t?.evaluated || t.judged) return;
  const judged = judge(state, t, Date.now());
  await ctx.emit(`${t.id}/judged`, { runId: event.runId, trialId: t.id, body: { case: "trialJudged", value: judged } });
  ctx.log.info({ verdict: judged.verdict, decision: judged.decision, score: judged.score, reason: judged.reason, run_reason: judged.runReason }, "trial judged");
  // The run's state now includes this judgement (emit returns once it is stored).
  if (isTerminal(judged.decision)) await finishRun(await ctx.runState(event.runId), judged, ctx);
}

/**
 * The planner has nothing that fits to propose, or the launcher's watchdog saw nothing proposed
 * for its grace period, and no trial is in flight: no judgement will come to end the run, so it
 * ends here (unless a trial was proposed, or a person paused or stopped it meanwhile). When the
 * watchdog says the budget is spent (RUN_END_TIME_BUDGET: trials still in flight hold no answer
 * from the runner), the run ends whatever is in flight.
 */
async function endIdleRun(event: Event, ctx: AgentContext): Promise<void> {
  const state = await ctx.runState(event.runId);
  if (event.body.case !== "plannerIdle" || state.finished) return;
  const idle = event.body.value;
  const runEnd = idle.runEnd || RunEnd.NOTHING_FITS;
  if (runEnd !== RunEnd.TIME_BUDGET && (state.paused || state.stopRequested || inFlight(state))) return;
  const last = create(TrialJudgedSchema, { decision: Decision.STOP, runEnd, runReason: runEnd === RunEnd.NOTHING_FITS ? `nothing more fits: ${idle.reason}` : idle.reason });
  await finishRun(state, last, ctx);
}

/**
 * A person stopped the run: with nothing in flight it ends here; otherwise the
 * analyst cancels what runs and the judgement of the last one ends it.
 */
async function stopRun(event: Event, ctx: AgentContext): Promise<void> {
  const state = await ctx.runState(event.runId);
  if (state.finished || !state.stopRequested || inFlight(state)) return;
  const last = create(TrialJudgedSchema, { decision: Decision.STOP, reason: doneBy(state.stopRequested, "stopped") });
  await finishRun(state, last, ctx);
}

await runAgent({
  role: "judge",
  kinds: ["trialEvaluated", "runIntervention", "plannerIdle"],
  // The final test confirmation may train the best model once more (when its weights are gone).
  ackWaitMs: 60_000,
  // One judgement at a time per judge: each decides on the count of the ones before it.
  handle: async (event, ctx) => {
    if (event.body.case === "trialEvaluated") await judgeTrial(event, ctx);
    else if (event.body.case === "runIntervention" && event.body.value.kind === InterventionKind.STOP) await stopRun(event, ctx);
    else if (event.body.case === "plannerIdle") await endIdleRun(event, ctx);
  },
});
