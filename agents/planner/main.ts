/**
 * The planner (architect): proposes the run's first trials once the brief is
 * in (or at run start when research is off), and one new trial for every
 * trial judged "iterate", until the trial budget is spent.
 *
 * Trial ids are derived from what caused them (the k-th judgement of the
 * run gives trial P+k), so two planner instances, or a redelivered message,
 * propose the same trial id and JetStream keeps one.
 */
import { adoptedConcepts, blocksOf } from "../../core/brief.js";
import { request } from "../../swarm/lineage-query.js";
import { Decision, InterventionKind, Verdict, type Event } from "../../proto/gen/research/v1/events_pb.js";
import { datasetInfo } from "../../swarm/dataset-info.js";
import { capacityOf, inFlight, queuedProposals, slotsToFill, type RunState } from "../../swarm/run-state.js";
import { isContinued, type TrialState } from "../../swarm/trial-state.js";
import { trialId } from "../../core/ids.js";
import { STALL_TRIALS, stallQuery, stalledOn } from "./stall.js";
import { MUTATION, SURFACE } from "../../core/enums.js";
import { TrialStatus } from "../../proto/gen/research/v1/common_pb.js";
import { runAgent, type AgentContext } from "../../swarm/runtime.js";
import { askLlm, type LlmAnswer } from "../../swarm/llm.js";
import { loadPrompt } from "../../swarm/prompts.js";
import { proposeWithLlm } from "./llm-policy.js";
import { planInputFor, probeFidelity } from "./proposals.js";
import { baselineProposals } from "./policies/hand.js";
import { POLICIES } from "./policies/index.js";
import type { PlanInput, Proposal } from "./types.js";
import { decide } from "./decide.js";
import { continuation } from "./promotion.js";
import { brokenPromises } from "./promises.js";
import { pastEvidence, pastFailures } from "./past-runs.js";
import { searchDevice } from "../../core/defaults.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";

const PROMPT = loadPrompt("planner");

/**
 * Whether a run's trials may inform this run: only the runs of --warm-start-from when it names
 * some, else any (the callers learn nothing at all with --no-warm-start).
 */
function learnsFrom(state: RunState): (runId: string) => boolean {
  const from = new Set(state.settings?.warmStartFrom ?? []);
  return (runId) => from.size === 0 || from.has(runId);
}

/** Configs that failed in earlier trials of any run this one learns from (past-runs.ts pastFailures): the planner must not repeat them. */
async function failedInLineage(ctx: AgentContext, state: RunState): Promise<Set<string>> {
  if (state.settings?.noWarmStart) return new Set();
  const learns = learnsFrom(state);
  const text = `${state.goal?.dataset ?? ""} ${state.goal?.rawText ?? ""}`.trim() || "trial";
  const res = await request(ctx.bus, { text, k: 50, status: TrialStatus.FAILED }).catch((err: unknown) => {
    ctx.log.warn({ err: (err as Error).message }, "lineage store not reachable; planning without past failures");
    return undefined;
  });
  return pastFailures(res ?? [], learns);
}

/**
 * What past runs give this one (past-runs.ts): the rows of judged trials the lineage finds for
 * this goal, any dataset, weighed by how far each run's data is from this run's. None with
 * --no-warm-start; only the runs of --warm-start-from when it names some. Only for an accuracy
 * goal: a lineage row's interval is accuracy's.
 */
async function pastRuns(ctx: AgentContext, input: PlanInput): Promise<Pick<PlanInput, "pastObservations" | "pastConfigs" | "pastLong">> {
  const { state } = input;
  if (!state.goal || state.objective.metric !== "accuracy" || state.settings?.noWarmStart) return {};
  const res = await request(ctx.bus, { text: `${state.goal.dataset} ${state.goal.rawText}`, k: 200, status: TrialStatus.JUDGED }).catch((err: unknown) => {
    ctx.log.warn({ err: (err as Error).message }, "lineage store not reachable; no warm start from past runs");
    return [];
  });
  const { observations, configs, long } = pastEvidence(res, { runId: state.runId, info: input.info, probe: probeFidelity(input), learns: learnsFrom(state), params: input.params });
  if (observations.length || long.length) ctx.log.info({ observations: observations.length, configs: configs.length, best: configs[0]?.trialId, long: long[0]?.trialId }, "warm start from past runs");
  return { pastObservations: observations, pastConfigs: configs, pastLong: long };
}

/**
 * Lineage lookups per run, kept a few minutes: what other runs learned changes
 * slowly, and a vector search per proposal grew to most of the planner's time
 * as the store's fragments piled up (bench/orchestration-bench.ts). This
 * run's own trials are in its state.
 */
const LINEAGE_TTL_MS = 5 * 60_000;
const lineageCache = new Map<string, { at: number; value: Promise<unknown> }>();
function fromLineage<T>(runId: string, what: string, load: () => Promise<T>): Promise<T> {
  const key = `${runId}/${what}`;
  const hit = lineageCache.get(key);
  if (hit && Date.now() - hit.at < LINEAGE_TTL_MS) return hit.value as Promise<T>;
  for (const [k, v] of lineageCache) if (Date.now() - v.at >= LINEAGE_TTL_MS) lineageCache.delete(k);
  const value = load();
  lineageCache.set(key, { at: Date.now(), value });
  return value;
}

let hardware: Promise<Pick<PlanInput, "slots" | "device">> | undefined;

/**
 * The runner's training slots and device, asked once: the budget plan counts a trial's seeds
 * in rounds of the slots, and the device sets where the search starts (core/defaults.ts).
 */
function runnerHardware(ctx: AgentContext): Promise<Pick<PlanInput, "slots" | "device">> {
  hardware ??= ctx
    .runner()
    .health({}, { timeoutMs: 5_000 })
    .then((h) => ({ slots: h.slots || undefined, device: searchDevice(h.device?.kind) }))
    .catch((err: unknown) => {
      ctx.log.warn({ err: (err as Error).message }, "runner health not answered; planning for a CPU, seeds as if they ran one after another");
      hardware = undefined;
      return {};
    });
  return hardware;
}

async function planInput(ctx: AgentContext, state: RunState, index: number): Promise<PlanInput> {
  const info = await datasetInfo(ctx.runner(), state.goal);
  const input = planInputFor(state, info, index, {
    failedElsewhere: await fromLineage(state.runId, "failed", () => failedInLineage(ctx, state)),
    nowMs: Date.now(),
    ...(await runnerHardware(ctx)),
  });
  return { ...input, ...(await fromLineage(state.runId, "past", () => pastRuns(ctx, input))) };
}

/**
 * One proposal: the LLM's when one is configured for the planner (and the
 * run does not ask for the random baseline), else, or when it fails, the
 * built-in policy's.
 */
async function propose(ctx: AgentContext, input: PlanInput, index: number, builtin: () => Proposal | undefined): Promise<void> {
  const state = input.state;
  const useLlm = state.settings?.planner !== "random";
  const answer: LlmAnswer<Proposal | undefined> = useLlm
    ? await askLlm(ctx, { runId: state.runId, trialId: trialId(state.runId, index) }, {
        role: "planner",
        purpose: "propose",
        prompt: PROMPT,
        ask: (client) => proposeWithLlm(client, PROMPT, input, index),
        builtin,
      })
    : { value: builtin() };
  if (!answer.value) {
    ctx.log.warn({ index }, "no new candidate within the budgets; proposing nothing");
    return;
  }
  const proposer = answer.model ? `llm:${answer.model}` : `${state.settings?.planner || "builtin"}${answer.fallbackReason ? " (LLM fallback)" : ""}`;
  const past = input.pastObservations ?? [];
  const prior = { pastObservations: past.length, pastWeight: past.reduce((s, o) => s + (o.weight ?? 1), 0) };
  await publishProposal(ctx, state, index, answer.value, proposer, answer.model ? PROMPT.version : "", prior);
}

/** `prior`: the past results in the surrogate's prior when the policy or an LLM proposed it; none for a promotion or a person's trial. */
async function publishProposal(ctx: AgentContext, state: RunState, index: number, p: Proposal, proposer: string, promptVersion: string, prior?: { pastObservations: number; pastWeight: number }): Promise<void> {
  const id = trialId(state.runId, index);
  // What the trial adopts from the briefs is read from its configs against its parent's, whoever proposed it.
  const parent = p.parentIds[0] ? state.trials.get(p.parentIds[0]) : undefined;
  const adopted = adoptedConcepts(state.briefs, blocksOf(p.model, p.train), parent && blocksOf(parent.model, parent.train));
  await ctx.emit(`${id}/proposed`, {
    runId: state.runId,
    trialId: id,
    body: {
      case: "trialProposed",
      value: {
        hypothesis: p.hypothesis,
        rationale: adopted.length ? `${p.rationale}\nadopts from the research brief: ${adopted.map((a) => `${a.name} (${a.blocks.join(", ")})`).join("; ")}` : p.rationale,
        parentIds: p.parentIds,
        surface: p.surface ? SURFACE.value(p.surface) : undefined,
        mutation: MUTATION.value(p.mutation),
        model: modelSpec(p.model),
        train: trainSpec(p.train),
        index,
        rung: p.rung,
        seeds: p.seeds ?? 0,
        adoptedConcepts: adopted.map((a) => a.name),
        proposer,
        promptVersion,
        interventionId: p.interventionId ?? "",
        lastTraining: p.lastTraining ?? false,
        seedsAtOnce: p.seedsAtOnce ?? false,
        initWeights: p.initWeights,
        informedBy: (p.informedBy ?? []).map((x) => x.trialId),
        informedWeights: (p.informedBy ?? []).map((x) => x.weight),
        ...prior,
      },
    },
  });
  // ctx.log carries the handled event's trial_id (the trial judged, or none): the new one has its own key.
  ctx.log.info({ proposed_trial_id: id, surface: p.surface, hypothesis: p.hypothesis }, "trial proposed");
}

function policyOf(state: RunState) {
  return state.settings?.planner === "random" ? POLICIES.random : POLICIES.builtin;
}

async function proposeInitial(ctx: AgentContext, runId: string): Promise<void> {
  const state = await ctx.runState(runId);
  if (state.finished || state.order.length > 0) return;
  // Runner jobs still queued take none yet: their openings are proposed when they come up (fillFreeSlots).
  const count = Math.max(1, Math.min(capacityOf(state), state.settings?.maxTrials || Infinity));
  const input = await planInput(ctx, state, 0);
  // A warm open-ended run may continue a past run's long training first, alone: its seeds take
  // the cores (the other opening slots stay empty; proposeNext).
  const continued = continuation(input);
  const broken = continued && brokenPromises(input, 0, { kind: "promote", proposal: continued });
  if (continued && !broken?.length) return publishProposal(ctx, state, 0, continued, "scheduler", "");
  if (broken?.length) ctx.log.error({ index: 0, broken }, "the decision core held back a move that breaks the planner's promises");
  // A person's starting point is proposed as it is, by no policy and no LLM. Slots beyond its
  // two trials (a runner with room for more) start the run's own first proposals beside it.
  const baseline = baselineProposals(input).slice(0, count);
  for (const [i, p] of baseline.entries()) await publishProposal(ctx, state, i, p, "launch --from", "");
  const builtin = policyOf(state).initial(input, count - baseline.length);
  for (let i = baseline.length; i < count; i++) {
    // Later initial proposals see the earlier ones, so an LLM does not repeat itself.
    const current = i === 0 ? input : { ...input, state: await ctx.runState(runId) };
    await propose(ctx, current, i, () => builtin[i - baseline.length]);
  }
  const after = await ctx.runState(runId);
  if (after.order.length === 0) await sayIdle(ctx, after, 0, "no starting config fits the budgets");
}

/** The planner proposes nothing for slot `index`: with nothing in flight no judgement will come to end the run, so the judge ends it on this. */
async function sayIdle(ctx: AgentContext, state: RunState, index: number, reason: string): Promise<void> {
  if (inFlight(state) || state.paused || state.stopRequested) return;
  await ctx.emit(`idle/${index}`, { runId: state.runId, body: { case: "plannerIdle", value: { reason, index } } });
}

async function askWhenStalled(ctx: AgentContext, state: RunState, judged: TrialState): Promise<void> {
  if (!state.settings?.research) return;
  const stalled = stalledOn(state, judged);
  if (!stalled) return;
  const surface = judged.proposed!.surface;
  const name = SURFACE.name(surface);
  const query = stallQuery(state, stalled);
  const requestId = `${state.runId}-rq${judged.judgedPosition}`;
  await ctx.emit(`${requestId}/requested`, {
    runId: state.runId,
    body: {
      case: "researchRequested",
      value: { requestId, query, surface, reason: `${STALL_TRIALS} ${name} trials in a row without gain`, trialIds: stalled.map((t) => t.id) },
    },
  });
  ctx.log.info({ surface: name, query }, "surface stalled; asked the researcher a narrower question");
}

/**
 * The proposal for the slot that `judged` freed (trial P + its judged position): what the
 * decision core (decide.ts) chooses, a new config of the built-in policy asked of the LLM
 * first when one is configured.
 */
async function proposeAfter(ctx: AgentContext, state: RunState, judged: TrialState): Promise<void> {
  if (state.finished || judged.judgedPosition === undefined) return;
  const index = (state.settings?.parallel || 1) + judged.judgedPosition;
  if (state.trials.get(trialId(state.runId, index))?.proposed) return;
  await askWhenStalled(ctx, state, judged);
  const input = await planInput(ctx, state, index);
  const move = decide(input, index);
  switch (move.kind) {
    case "nothing":
      if (move.broken) ctx.log.error({ index, broken: move.broken }, "the decision core held back a move that breaks the planner's promises");
      else ctx.log.info({ index, why: move.why }, "proposing nothing");
      return sayIdle(ctx, state, index, move.why);
    case "wait":
      return void ctx.log.info({ index, why: move.why }, "waiting for a trial in flight");
    case "promote":
      return publishProposal(ctx, state, index, move.proposal, "scheduler", "");
    case "propose":
      if (move.by === "person") return publishProposal(ctx, state, index, move.proposal, queuedProposals(state)[0]!.intervention.who, "");
      if (move.by === "starting point") return publishProposal(ctx, state, index, move.proposal, "launch --from", "");
      return propose(ctx, input, index, () => move.proposal);
  }
}

async function proposeNext(ctx: AgentContext, event: Event): Promise<void> {
  if (event.body.case !== "trialJudged" || event.body.value.decision !== Decision.ITERATE) return;
  const state = await ctx.runState(event.runId);
  const judged = state.trials.get(event.trialId);
  if (!judged) return;
  // A continued training that failed or was rejected (the runner no longer kept the weights)
  // leaves the run where a cold one starts. One that was accepted is trained on by the last long
  // training in the slot it freed, which has the runner to itself: the other opening slots stay empty.
  if (isContinued(judged) && judged.judged?.verdict !== Verdict.ACCEPT) return reopen(ctx, state);
  // The slot this judgement freed, after any that an earlier judgement left unfilled.
  await fillFreeSlots(ctx, event.runId);
}

/**
 * A run whose continued training (proposeInitial) came to nothing: its opening proposals, as a
 * cold run's, in the opening slots it left empty and the one its judgement freed, computed
 * together so that none repeats another.
 */
async function reopen(ctx: AgentContext, state: RunState): Promise<void> {
  const parallel = state.settings?.parallel || 1;
  const maxTrials = state.settings?.maxTrials || Infinity;
  const indices = [...Array.from({ length: parallel - 1 }, (_, i) => i + 1), parallel].filter((i) => i < maxTrials && !state.trials.get(trialId(state.runId, i))?.proposed);
  if (!indices.length) return;
  await proposeOpenings(ctx, state, indices);
  await sayIdle(ctx, await ctx.runState(state.runId), indices[0]!, "no starting config fits the budgets");
}

/** The policy's opening proposals for these slots, computed together so that none repeats another. */
async function proposeOpenings(ctx: AgentContext, state: RunState, indices: number[]): Promise<void> {
  const input = await planInput(ctx, state, indices[0]!);
  const builtin = policyOf(state).initial(input, indices.length);
  for (const [k, index] of indices.entries()) {
    const current = k === 0 ? input : { ...input, state: await ctx.runState(state.runId) };
    await propose(ctx, current, index, () => builtin[k]);
  }
}

/**
 * After a judgement, a resume, a proposal queued while slots were free, or a runner job that came
 * up: the free slots (swarm/run-state.ts slotsToFill), the openings proposeInitial left for
 * runner jobs still queued first, then those judgements freed, oldest first.
 */
async function fillFreeSlots(ctx: AgentContext, runId: string): Promise<void> {
  const state = await ctx.runState(runId);
  const { openings, after } = slotsToFill(state);
  if (openings.length) await proposeOpenings(ctx, state, openings);
  for (const t of after) await proposeAfter(ctx, await ctx.runState(runId), t);
}

await runAgent({
  role: "planner",
  kinds: ["runStarted", "briefReady", "trialJudged", "runIntervention", "runnerJobs"],
  handle: async (event, ctx) => {
    switch (event.body.case) {
      case "runStarted":
        if (!event.body.value.settings?.research) await proposeInitial(ctx, event.runId);
        return;
      case "briefReady":
        return proposeInitial(ctx, event.runId);
      case "trialJudged":
        return proposeNext(ctx, event);
      case "runIntervention":
        if (event.body.value.kind === InterventionKind.RESUME || event.body.value.kind === InterventionKind.PROPOSE) await fillFreeSlots(ctx, event.runId);
        return;
      case "runnerJobs":
        return fillFreeSlots(ctx, event.runId);
      default:
        return;
    }
  },
});
