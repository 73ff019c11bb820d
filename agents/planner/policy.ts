/**
 * The built-in planner brain and the random baseline.
 *
 * builtin: the first proposals adopt what the brief suggests, as cheap
 * rung-0 probes. After that, each proposal is either a promotion of the
 * multi-fidelity scheduler (scheduler.ts: the top 1/3 of a rung trains again
 * on more data and epochs) or a new config: a UCB bandit over the recipe
 * surfaces (architecture, optimisation, regularisation) picks where the edit
 * goes, rewarding surfaces by the CI-lower-bound gains their trials measured,
 * and the edit is applied to the best rung-0 trial, so child and parent are
 * compared at the same fidelity. Every candidate is compiled (parameter
 * budget), its time predicted from the run's measured speed (it must fit the
 * trial budget and what the run has left after its reserve), and dropped when
 * an identical config already ran here or failed anywhere in the lineage.
 *
 * random: uniform draws from the same space, no memory. The baseline.
 */
import { createHash } from "node:crypto";
import type { Brief } from "../../core/brief.js";
import { DEFAULT_SEEDS, PROBE_SEEDS, RECIPE_DEFAULTS, SEARCH_DEFAULTS, type SearchDevice } from "../../core/defaults.js";
import { OPTIMIZER, SURFACE, type SurfaceName as Surface } from "../../core/enums.js";
import { parseModelConfig, parseTrainConfig, type ModelConfigInput, type TrainConfig, type TrainConfigInput } from "../../core/model-config.js";
import { Verdict, type Intervention } from "../../proto/gen/research/v1/events_pb.js";
import type { DatasetInfo } from "../../proto/gen/research/v1/runner_pb.js";
import { bestTrial, isClaimingPromotion, isPromotion, liveSeconds, patienceOf, plateau, rungOf, scoreOf, slowestSeed, slowestSeedSeconds, type RunState, type TrialState } from "../../swarm/run-state.js";
import { BATCH_SIZES, effectiveOptimizer, FLIP_SAFE, imageSide, isImage, lrForBatch, MUTATIONS, type Genome, type Mutation } from "./mutations.js";
import { TEMPLATE_WIDTH, templatesFor, type Template } from "./templates.js";
import { isRecord, parseJson } from "../../core/json.js";
import { budgetPlan, overRunBudget } from "../../swarm/budget.js";
import { fitTpe, GENOME_SPACE, genomeFeatures, type Observation } from "./surrogate.js";
import { atRung, EXPLORE_SHARE, ladder, nextPromotion, promotedIds, PROMOTION_SURFACE, seedsAtRung, type Fidelity, type Promotion } from "./scheduler.js";

export interface Proposal {
  /** Fidelity rung (scheduler.ts): 0 for every new config. */
  rung: number;
  /** Seeds to evaluate with; undefined: the run's setting. */
  seeds?: number;
  hypothesis: string;
  rationale: string;
  parentIds: string[];
  /** None for a person's proposal: the bandit over surfaces learns only from its own. */
  surface?: Surface;
  model: ModelConfigInput;
  train: TrainConfigInput;
  /** A person's queued proposal this one carries. */
  interventionId?: string;
  /** The run's last long training: nothing long fits after it, so nothing else starts beside it. */
  lastTraining?: boolean;
}

export interface PlanInput {
  state: RunState;
  info: DatasetInfo;
  rng: () => number;
  /** Parameter count of a config, or an error message when it does not compile. */
  params: (model: ModelConfigInput) => number | string;
  /** Fingerprints of configs that failed in any run (lineage feedback). */
  failedElsewhere: Set<string>;
  /** Now, for the budget plan; injected so the policy is testable. */
  nowMs?: number;
  /** Rung-0 results of past runs on the same dataset (lineage warm start), weighted below this run's. */
  pastObservations?: Observation[];
  /** Training slots of the runner (its Health); unknown: a trial's seeds are taken to run one after another. */
  slots?: number;
  /** What the runner trains on (its Health): the starting fidelity, batch, precision and templates (core/defaults.ts). */
  device?: SearchDevice;
}

export type Policy = (input: PlanInput, index: number) => Proposal | undefined;

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function canonical(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonical).join(",")}]`;
  if (x && typeof x === "object") {
    return `{${Object.keys(x)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((x as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(x);
}

/**
 * The recipe as gpu-runner/python/trainer.py runs it: what it ignores left
 * out, so that two recipes that train identically share a fingerprint.
 * Dataset- and device-dependent no-ops (augmentation of non-images, amp on a
 * CPU) stay distinct: a fingerprint also matches lineage rows of other runs.
 * Deterministic training replays a config; it is not another one.
 */
function effectiveRecipe(train: TrainConfig): Partial<TrainConfig> {
  const { momentum, nesterov, step_size, gamma, deterministic: _replays, ...rest } = train;
  const optimizer = effectiveOptimizer(train.optimizer, train.weight_decay);
  return {
    ...rest,
    optimizer,
    // Nesterov without momentum stays distinct: torch's SGD refuses it.
    ...(optimizer === "sgd" ? { momentum, nesterov } : {}),
    ...(train.schedule === "step" ? { step_size, gamma } : {}),
  };
}

/**
 * Identity of a candidate for "already tried": layers and recipe, not the
 * name, with the schema's defaults filled. A config that does not parse keeps
 * its raw form, which can only match itself.
 */
export function fingerprint(model: ModelConfigInput, train: TrainConfigInput): string {
  const m = parseModelConfig(model);
  const t = parseTrainConfig(train);
  return createHash("sha256")
    .update(canonical({ layers: m.ok ? m.value.layers : model.layers, train: t.ok ? effectiveRecipe(t.value) : train }))
    .digest("hex")
    .slice(0, 16);
}

export function genomeOf(t: TrialState): Genome | undefined {
  return t.model && t.train ? { model: t.model, train: t.train } : undefined;
}

/**
 * The rung-0 probe for the runner's device (core/defaults.ts SEARCH_DEFAULTS): the run's
 * search subset and epochs, the device's batch size with Adam's rate scaled to it, and on
 * a GPU mixed precision and channels-last images. A template's own recipe goes on top.
 */
function startingTrain(input: PlanInput, template?: Template): TrainConfigInput {
  const s = input.state.settings;
  const d = SEARCH_DEFAULTS[input.device ?? "cpu"];
  const total = input.info.nTrain + input.info.nVal;
  // A set barely larger than the slice is not worth slicing.
  const subset = s?.subset || (d.subset && total > 1.2 * d.subset ? d.subset : 0);
  const recipe: TrainConfigInput = { optimizer: "adam", lr: 2e-3, ...template?.recipe };
  const image = isImage(input.info);
  return {
    ...recipe,
    lr: lrForBatch(recipe.optimizer ?? RECIPE_DEFAULTS.optimizer, recipe.lr!, 128, d.batchSize),
    batch_size: d.batchSize,
    epochs: s?.epochs || d.epochs,
    subset,
    ...(d.amp && { amp: true }),
    ...(d.channelsLast && image && { channels_last: true }),
    ...(template?.recipe && image && FLIP_SAFE.has(input.info.name) && { augment: { hflip: true } }),
  };
}

/** Building blocks named by a brief, in the brief's order of relevance. */
function briefBlocks(briefs: Brief[]): string[] {
  return [...new Set(briefs.flatMap((b) => b.architectural_suggestions.flatMap((s) => s.building_blocks ?? [])))];
}

const RECIPE_FROM_BRIEF: Record<string, Partial<TrainConfigInput>> = {
  cosine_schedule: { schedule: "cosine" },
  label_smoothing: { label_smoothing: 0.1 },
  adamw: { optimizer: "adamw", weight_decay: 0.05 },
  weight_decay: { weight_decay: 5e-4 },
};

/**
 * What the planner derives from a proposed trial never changes once it is
 * proposed; kept per trial object (the follower's state reuses them), so a
 * proposal costs the same at trial 500 as at trial 5.
 */
const derived = new WeakMap<TrialState, { fingerprint?: string; params?: number | string }>();
function derivedOf(t: TrialState) {
  let d = derived.get(t);
  if (!d) derived.set(t, (d = {}));
  return d;
}

function tried(state: RunState): Set<string> {
  const out = new Set<string>();
  for (const t of state.trials.values()) {
    const d = derivedOf(t);
    const g = d.fingerprint === undefined ? genomeOf(t) : undefined;
    if (g) d.fingerprint = fingerprint(g.model, g.train);
    if (d.fingerprint) out.add(d.fingerprint);
  }
  return out;
}

function withinBudget(input: PlanInput, g: Genome, seen: Set<string>): string | undefined {
  const fp = fingerprint(g.model, g.train);
  if (seen.has(fp)) return "already tried in this run";
  if (input.failedElsewhere.has(fp)) return "failed the same way in the lineage";
  const p = input.params(g.model);
  if (typeof p === "string") return p;
  const max = Number(input.state.goal?.maxParams ?? 0n);
  if (max > 0 && p > max) return `${p} parameters exceed the limit of ${max}`;
  return undefined;
}

/**
 * Seconds a genome's slowest seed should take, from its parent's measured seed: the time to
 * its first step stays (the job's start-up: ~1 s of CUDA context on a GPU host, most of a
 * short probe there), the training after it scales with examples x epochs and sqrt(params).
 */
function predictedSeconds(input: PlanInput, parent: TrialState, g: Genome, pg: Genome): number | undefined {
  const seed = slowestSeed(parent);
  if (!seed) return undefined;
  // subset 0 is the whole training split (validation is held out of it).
  const size = (t: TrainConfigInput) => (t.subset || input.info.nTrain) * (t.epochs ?? RECIPE_DEFAULTS.epochs);
  const pp = input.params(pg.model);
  const cp = input.params(g.model);
  const capacity = typeof pp === "number" && typeof cp === "number" && pp > 0 ? Math.sqrt(cp / pp) : 1;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  return startUp + (seed.seconds - startUp) * (size(g.train) / size(pg.train)) * capacity;
}

export const initialBuiltin = (input: PlanInput, count: number): Proposal[] => {
  const blocks = briefBlocks(input.state.briefs);
  const recipeBlocks = blocks.filter((b) => RECIPE_FROM_BRIEF[b]);
  const rank = (t: Template) => t.blocks.filter((b) => blocks.includes(b)).length;
  const device = input.device ?? "cpu";
  const templates = templatesFor(input.info, device)
    .map((t, i) => ({ t, i, r: rank(t) }))
    .sort((a, b) => b.r - a.r || a.i - b.i)
    .map((x) => x.t);
  const seen = tried(input.state);
  const out: Proposal[] = [];
  for (const t of templates) {
    if (out.length >= count) break;
    const recipe = recipeBlocks[out.length % Math.max(1, recipeBlocks.length)];
    // A family's own recipe stands; the brief's recipe knob goes to families without one.
    const knob = recipe && !t.recipe ? RECIPE_FROM_BRIEF[recipe] : undefined;
    const train = { ...startingTrain(input, t), ...knob };
    const g: Genome = { model: t.build(input.info, TEMPLATE_WIDTH[device]), train };
    if (withinBudget(input, g, seen)) continue;
    seen.add(fingerprint(g.model, g.train));
    const used = [...t.blocks.filter((b) => blocks.includes(b)), ...(knob ? [recipe!] : [])];
    out.push({
      rung: 0,
      seeds: PROBE_SEEDS,
      hypothesis: `${t.name} with ${train.optimizer} lr ${Number(train.lr!.toPrecision(3))}${knob ? ` and ${recipe}` : ""} is a strong starting point`,
      rationale: `a starting template for this input shape${used.length ? `, chosen for the brief's ${used.join(", ")}` : ""}`,
      parentIds: [],
      surface: "architecture",
      model: g.model,
      train: g.train,
    });
  }
  return out;
};

interface SurfaceStats {
  n: number;
  gain: number;
}

function surfaceStats(state: RunState): Map<Surface, SurfaceStats> {
  const stats = new Map<Surface, SurfaceStats>(SURFACE.names.map((s) => [s, { n: 0, gain: 0 }]));
  for (const t of state.trials.values()) {
    const j = t.judged;
    // Promotions are the scheduler's moves, not edits: their gain is the fidelity's.
    if (!j || !t.proposed?.parentIds.length || isPromotion(t)) continue;
    const name = SURFACE.name(t.proposed.surface);
    const s = name && stats.get(name);
    if (!s) continue;
    s.n++;
    // A failed edit is a small loss: it spent a trial and taught little.
    s.gain += j.verdict === Verdict.ACCEPT ? j.gain : -0.01;
  }
  return stats;
}

/** Surfaces of new configs' edits; the data surface's move is the scheduler's promotion. */
const EDIT_SURFACES: readonly Surface[] = SURFACE.names.filter((s) => s !== PROMOTION_SURFACE);

/** Surfaces in UCB1 order; untried ones first. */
function surfaceOrder(state: RunState, rng: () => number, hint?: Surface): Surface[] {
  const stats = surfaceStats(state);
  const total = [...stats.values()].reduce((a, s) => a + s.n, 0);
  const ucb = (s: Surface) => {
    const st = stats.get(s)!;
    if (st.n === 0) return Infinity;
    // Gains are a few points of accuracy at most; scale exploration to match.
    return st.gain / st.n + 0.02 * Math.sqrt((2 * Math.log(total + 1)) / st.n) + (s === hint ? 0.005 : 0);
  };
  return [...EDIT_SURFACES].sort((a, b) => ucb(b) - ucb(a) || rng() - 0.5);
}

/** What the analyst's reading of the parent suggests. */
function hintFrom(parent: TrialState): Surface | undefined {
  const a = parent.evaluated?.analysis;
  if (!a) return undefined;
  if (a.overfitting === "moderate" || a.overfitting === "severe") return "regularisation";
  // Still improving without overfitting: the model underfits. Longer training is
  // the scheduler's promotion; more capacity is an architecture edit.
  if (a.convergence === "improving") return "architecture";
  if (a.convergence === "diverging" || a.convergence === "unstable") return "optimisation";
  if (a.convergence === "plateaued") return "architecture";
  return undefined;
}

function shuffle<T>(xs: T[], rng: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The rung-0 fidelity every new config trains at, whoever authored it. */
/**
 * A person's queued proposal as the planner's: their model, and their
 * training on top of the run's probe fidelity. The coder validates and
 * builds it like any other.
 */
export function handProposal(input: PlanInput, v: Intervention): Proposal {
  const train = parseJson(v.trainConfigJson);
  return {
    rung: 0,
    hypothesis: v.hypothesis,
    rationale: `proposed by ${v.who}${v.reason ? `: ${v.reason}` : ""}`,
    parentIds: v.parentIds,
    surface: undefined,
    model: parseJson(v.modelConfigJson) as ModelConfigInput,
    train: { ...startingTrain(input), ...(isRecord(train) ? (train as TrainConfigInput) : {}) },
    interventionId: v.interventionId,
  };
}

export function probeFidelity(input: PlanInput): Fidelity {
  const probe = startingTrain(input);
  return { subset: probe.subset ?? 0, epochs: probe.epochs ?? RECIPE_DEFAULTS.epochs };
}

function rungs(input: PlanInput): Fidelity[] {
  return ladder(input.info, probeFidelity(input));
}

/**
 * How much longer a trial with `seeds` seeds takes from start to its last
 * seed than its slowest seed: its seeds share the runner's slots with each
 * other and with the run's other trials in flight. The parent's, measured,
 * scaled by the rounds its seeds take on the runner's slots against the
 * parent's (pessimistic: the run's other trials use slots too, yet a
 * 30-minute run's 3-seed training on 2 slots took 1.6 times its slowest
 * seed, not the 2 rounds assumed here; without the slot count, 3 as if
 * seeds ran one after another, it was planned 6 epochs where 9 fitted).
 */
function queueFactor(input: PlanInput, parent: TrialState, seeds: number): number {
  const result = parent.evaluated?.result;
  const seed = slowestSeedSeconds(parent);
  const measured = result?.seconds && seed ? Math.max(1, result.seconds / seed) : 1;
  const rounds = (n: number) => Math.ceil(n / (input.slots || 1));
  return measured * Math.max(1, rounds(seeds) / rounds(result?.seedResults.length || seeds));
}

/** Seeds a proposal evaluates with. */
function seedsOf(input: PlanInput, p: Pick<Proposal, "seeds">): number {
  return p.seeds || input.state.settings?.seeds || DEFAULT_SEEDS;
}

/**
 * Why a genome cannot start now, given a seed's predicted time; undefined
 * when it fits: each seed within the trial budget, the whole trial (seeds
 * queued as its parent's were) before the run's reserve.
 */
function overBudget(input: PlanInput, parent: TrialState, predicted: number | undefined, seeds: number): string | undefined {
  if (predicted === undefined) return undefined;
  const trialBudget = input.state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0 && predicted > trialBudget * 0.85) return `predicted ${predicted.toFixed(0)} s exceeds the trial budget`;
  return overRunBudget(budgetPlan(input.state, input.nowMs ?? Date.now()), predicted * queueFactor(input, parent, seeds));
}

/**
 * The scheduler's move, whichever brain authors new configs: ASHA's promotion
 * when a finished trial has earned the next rung, or else the exploit phase's,
 * and only when it fits the budget. "wait": nothing should start now (the
 * exploit phase waits for a long training to end; see `exploring`).
 */
export function promote(input: PlanInput): Proposal | "wait" | undefined {
  const ladderNow = rungs(input);
  if (!exploring(input)) return promotionInFlight(input.state) ? "wait" : (exploit(input, ladderNow) ?? "wait");
  const promotion = nextPromotion(input.state, ladderNow.length - 1);
  const asha = promotion && promotionAt(input, promotion, ladderNow);
  if (!asha) return exploit(input, ladderNow);
  const last = lastLongTraining(input, promotion, asha, ladderNow);
  return last === "wait" ? undefined : (last ?? asha.proposal);
}

/**
 * Whether the run still explores: before its exploration share of the budget
 * (EXPLORE_SHARE), or later while its best config could not yet train longer
 * than it did (exploit has nothing to propose). After that the exploit phase
 * owns the runner: its long training of the best config goes first, and
 * nothing else starts while a long training runs, since on a shared device
 * (a GPU's memory and cores, two CPU cores) every probe beside it slows the
 * training that decides the run, and no probe could change its result.
 */
function exploring(input: PlanInput): boolean {
  const { state } = input;
  const budget = state.goal?.timeBudgetS ?? 0;
  const spent = liveSeconds(state, input.nowMs ?? Date.now());
  if (!(budget > 0) || spent < EXPLORE_SHARE * budget || state.judgedCount < patienceOf(state)) return true;
  if (promotionInFlight(state)) return false;
  return exploit(input, rungs(input)) === undefined;
}

/**
 * A promotion still training: the exploit phase waits for it before choosing what to train
 * last, since it may become the best (on an H200 a ResNet-9 still at rung 1 was passed over
 * for a 137k-parameter CNN's last training, and then beat it, 93.8% to 93.1%).
 */
function promotionInFlight(state: RunState): boolean {
  for (const t of state.trials.values()) if (isPromotion(t) && !t.judged) return true;
  return false;
}

/**
 * A promotion to a rung on the full split below the top, when the budget is
 * tight: after its training, no training twice as long would fit. Then it
 * is the run's last long training, and trains for the time left now (timedTop)
 * instead of the rung's few epochs; and it waits while another long training
 * runs, as the two would share the slots that each was planned to have. On two
 * CPU cores a 30-minute Fashion-MNIST run's one 54k x 5 x 3-seed training took
 * 886 s, and nothing longer fitted after it. Undefined: the budget is not
 * tight (or has no clock); ASHA's promotion stands.
 */
function lastLongTraining(
  input: PlanInput,
  promotion: Promotion,
  asha: { proposal: Proposal; predictedS: number },
  ladderNow: Fidelity[],
): Proposal | "wait" | undefined {
  const { state } = input;
  const top = ladderNow.length - 1;
  const rung = ladderNow[promotion.rung]!;
  if (promotion.rung >= top || rung.subset !== 0 || !((state.goal?.timeBudgetS ?? 0) > 0)) return undefined;
  const plan = budgetPlan(state, input.nowMs ?? Date.now());
  const perEpoch = wallOf(input, promotion.trial, asha) / rung.epochs;
  const after = plan.availableS - perEpoch * rung.epochs;
  // A training twice as long still fits after this rung's: ASHA's ladder stands.
  if (LAST_MARGIN * after >= 2 * perEpoch * rung.epochs) return undefined;
  if ([...state.trials.values()].some((t) => isClaimingPromotion(t) && !t.judged)) return "wait";
  const timed = timedTop(input, promotion.trial, ladderNow);
  if (!timed) return undefined;
  return {
    ...timed.proposal,
    rationale: `${promotion.reason}; the run's last long training: after rung ${promotion.rung}'s ${rung.epochs} epochs (predicted ${(perEpoch * rung.epochs).toFixed(0)} s) no longer training would fit, so it trains for the time that is left now; ${timed.proposal.rationale}`,
  };
}

/**
 * The exploit phase: ASHA fills a high rung only with ETA finished trials
 * below it, which a short budget never has. The best config not yet trained
 * at the top rung (by CI lower bound: the run's best first, then the
 * runners-up) goes directly to the top rung, never before the run has
 * judged a patience's worth of trials:
 *
 * - when the whole top rung fits, it starts once that is now or never
 *   (after another training of that length, one would not fit before the
 *   reserve) or once exploration has gone flat for half the judge's patience;
 * - when it no longer fits, the top rung is shortened to the most epochs
 *   that still fit (at least two more than the rung below), started once the
 *   run has spent its exploration share of the budget, or earlier when
 *   flat: on two CPU cores a 30-minute run never fits 54k x 15 epochs x 3
 *   seeds, and its best config (found by then) gained most from training
 *   longer, not from more probes;
 * - with no time left for that, the highest lower rung that fits, now or never.
 *
 * The budget's long trainings are spent on the best configs found, and a
 * plateau is answered by training them longer.
 */
function exploit(input: PlanInput, ladderNow: Fidelity[]): Proposal | undefined {
  const { state } = input;
  // Exploitation follows exploration: before the judge's patience worth of
  // trials there is no best config to speak of (a 30-minute run once sent its
  // first probe to the top rung, as its "now or never" was already true).
  if (state.judgedCount < patienceOf(state)) return undefined;
  const top = ladderNow.length - 1;
  const trials = [...state.trials.values()];
  const promoted = promotedIds(state);
  const pick = trials
    .filter((t) => t.judged?.verdict === Verdict.ACCEPT && rungOf(t) < top && !promoted.has(t.id))
    .sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0))[0];
  if (!pick) return undefined;
  const from = rungOf(pick);
  // One long training at a time.
  if (trials.some((t) => isPromotion(t) && !t.judged && rungOf(t) > from)) return undefined;
  const nowMs = input.nowMs ?? Date.now();
  const plan = budgetPlan(state, nowMs);
  const since = plateau(state).since;
  const flat = since >= patienceOf(state) / 2;
  const who = pick === bestTrial(state) ? "the run's best" : "the best config not yet trained this long";
  const exploitAt = (candidate: { proposal: Proposal; predictedS: number }, rung: number, why: string, lastTraining: boolean): Proposal => ({
    ...candidate.proposal,
    rationale: `exploit: ${who} (CI low ${pct(scoreOf(pick))}) trains at rung ${rung} now, since ${why}${lastTraining ? "; the run's last long training" : ""}; ${candidate.proposal.rationale}`,
    lastTraining,
  });
  const flatWhy = `the best CI low has not risen in the last ${since} judged trials`;
  const full = promotionAt(input, { trial: pick, rung: top, reason: "" }, ladderNow);
  if (!full) {
    const timed = timedTop(input, pick, ladderNow);
    if (timed) {
      const budget = state.goal?.timeBudgetS ?? 0;
      const spent = liveSeconds(state, nowMs);
      if (!flat && !(budget > 0 && spent >= EXPLORE_SHARE * budget)) return undefined;
      return exploitAt(
        timed,
        top,
        flat
          ? flatWhy
          : `the run has spent ${Math.round((100 * spent) / budget)}% of its budget exploring, and the whole top rung (${ladderNow[top]!.epochs} epochs) no longer fits before the reserve`,
        true,
      );
    }
  }
  for (let rung = top; rung > from; rung--) {
    const candidate = rung === top ? full : promotionAt(input, { trial: pick, rung, reason: "" }, ladderNow);
    if (!candidate) continue;
    const wall = wallOf(input, pick, candidate);
    const nowOrNever = plan.availableS < 2 * wall;
    if (!nowOrNever && !flat) return undefined;
    return exploitAt(candidate, rung, nowOrNever ? `its predicted ${wall.toFixed(0)} s still fit the ${plan.availableS.toFixed(0)} s left before the reserve` : flatWhy, nowOrNever);
  }
  return undefined;
}

/**
 * The run's last long training is planned to end this far into the time left
 * before the reserve: it is the run's longest training, and one cut by the
 * reserve (a loaded machine, a seed queued behind a probe) is lost whole.
 */
const LAST_MARGIN = 0.9;

/**
 * A last long training takes at least this share of the run's budget, and longer than
 * its config trained before: a shorter one tells little more than the trials it follows.
 */
const LAST_SHARE = 0.1;

/** Epochs a last long training may reach when its time allows: it stops at its time (train_seconds) first. */
const LAST_EPOCHS = 200;

/** A candidate's predicted wall time: its slowest seed, queued as its parent's seeds were. */
function wallOf(input: PlanInput, parent: TrialState, c: { proposal: Proposal; predictedS: number }): number {
  return c.predictedS * queueFactor(input, parent, seedsOf(input, c.proposal));
}

/**
 * The run's last long training when the whole top rung no longer fits: `pick`
 * on the top rung's data for the time the run has, not for a number of epochs
 * (train_seconds; the job anneals its schedule over that time). Epochs
 * predicted from trials timed beside others were wrong both ways: a GPU shared
 * with probes measured 2-3 times slower than the training would run alone
 * (nothing starts beside the last training), and a loaded CPU slower still;
 * the job itself knows how fast it goes. Its time is LAST_MARGIN of what is
 * left before the reserve, its seeds queued as `pick`'s were (queueFactor),
 * less the job's start-up and one more epoch's evaluation, and within the
 * trial budget.
 * Undefined when that is less than LAST_SHARE of the budget or than what `pick` trained.
 */
function timedTop(input: PlanInput, pick: TrialState, ladderNow: Fidelity[]): { proposal: Proposal; predictedS: number } | undefined {
  const { state } = input;
  const pg = genomeOf(pick);
  const seed = slowestSeed(pick);
  if (!pg || !seed || !((state.goal?.timeBudgetS ?? 0) > 0)) return undefined;
  const top = ladderNow[ladderNow.length - 1]!;
  const startUp = Math.min(seed.secondsToFirstStep, seed.seconds);
  const trained = seed.seconds - startUp;
  const passes = ((pg.train.subset || input.info.nTrain) / input.info.nTrain) * (pg.train.epochs ?? RECIPE_DEFAULTS.epochs);
  const fullEpochS = trained / passes;
  const overhead = startUp + fullEpochS;
  const seeds = seedsOf(input, { seeds: seedsAtRung(top) });
  const plan = budgetPlan(state, input.nowMs ?? Date.now());
  let trainS = (LAST_MARGIN * plan.availableS) / queueFactor(input, pick, seeds) - overhead;
  const trialBudget = state.settings?.trialTimeBudgetS ?? 0;
  if (trialBudget > 0) trainS = Math.min(trainS, 0.85 * trialBudget - overhead);
  trainS = Math.floor(trainS);
  if (trainS < LAST_SHARE * state.goal!.timeBudgetS || trainS <= trained) return undefined;
  // The long-training habits (atRung) for the epochs it should reach at its measured pace.
  const pace = Math.min(LAST_EPOCHS, Math.floor(trainS / fullEpochS));
  const train = { ...atRung(pg.train, { subset: 0, epochs: pace }, imageSide(input.info)), epochs: LAST_EPOCHS, train_seconds: trainS };
  const proposal: Proposal = {
    rung: ladderNow.length - 1,
    seeds: seedsAtRung(top),
    hypothesis: `train ${pick.id} for ${trainS} s on the full training split (about ${pace} epochs at its measured pace)`,
    rationale: `the same model and recipe, trained for the time the run has left, its schedule annealed over that time${train.augment?.cutout && !pg.train.augment?.cutout ? ", with cutout" : ""}`,
    parentIds: [pick.id],
    surface: PROMOTION_SURFACE,
    model: pg.model,
    train,
    lastTraining: true,
  };
  return { proposal, predictedS: overhead + trainS };
}

const pct = (x: number | undefined) => (x === undefined ? "?" : `${(100 * x).toFixed(2)}%`);

function promotionAt(
  input: PlanInput,
  promotion: Promotion,
  ladderNow: Fidelity[],
  fidelity: Fidelity = ladderNow[promotion.rung]!,
): { proposal: Proposal; predictedS: number } | undefined {
  const parent = promotion.trial;
  const pg = genomeOf(parent);
  if (!pg) return undefined;
  const g: Genome = { model: pg.model, train: atRung(pg.train, fidelity, imageSide(input.info)) };
  const predictedS = predictedSeconds(input, parent, g, pg);
  const seeds = seedsAtRung(fidelity);
  if (predictedS === undefined || overBudget(input, parent, predictedS, seedsOf(input, { seeds }))) return undefined;
  const data = fidelity.subset ? `${fidelity.subset} examples` : "the full training split";
  const proposal: Proposal = {
    rung: promotion.rung,
    seeds,
    hypothesis: `promote ${parent.id} to rung ${promotion.rung}: ${data}, ${fidelity.epochs} epochs`,
    rationale: `${promotion.reason ? `${promotion.reason}; ` : ""}the same model and recipe trained longer${g.train.schedule !== pg.train.schedule ? ` with a ${g.train.schedule} schedule` : ""}${g.train.augment?.crop_padding && !pg.train.augment?.crop_padding ? " and random crops" : ""}`,
    parentIds: [parent.id],
    surface: PROMOTION_SURFACE,
    model: g.model,
    train: g.train,
  };
  return { proposal, predictedS };
}

/** A new rung-0 config: a bandit-chosen edit of a good rung-0 trial. */
export const nextBuiltin: Policy = (input, index) => {
  const { state, rng } = input;
  const accepted = [...state.trials.values()]
    .filter((t) => t.judged?.verdict === Verdict.ACCEPT && rungOf(t) === 0)
    .sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0));
  if (accepted.length === 0) {
    // Nothing works yet: restart from a template not tried so far.
    return initialBuiltin(input, 1)[0];
  }
  // Mostly the best; sometimes a runner-up, so one lucky trial does not own the search.
  const parent = rng() < 0.75 ? accepted[0]! : accepted[Math.floor(rng() * Math.min(3, accepted.length))]!;
  const pg = genomeOf(parent);
  if (!pg) return undefined;
  const seen = tried(state);
  const hint = hintFrom(parent);
  const rejected: string[] = [];
  // The newest brief (a stall's narrower question, or the run's first) puts its concepts first.
  const brief = state.briefs[state.briefs.length - 1];
  const conceptsOf = (m: Mutation) => (brief?.architectural_suggestions ?? []).filter((s) => s.building_blocks?.some((b) => m.blocks.includes(b))).map((s) => s.name);
  const surrogate = fitTpe(GENOME_SPACE, [...rungZeroHistory(input), ...(input.pastObservations ?? [])]);
  for (const surface of surfaceOrder(state, rng, hint)) {
    const candidates = shuffle(
      MUTATIONS.filter((x) => x.surface === surface),
      rng,
    ).sort((a, b) => conceptsOf(b).length - conceptsOf(a).length);
    const valid: Array<{ m: Mutation; g: Genome; score: number }> = [];
    for (const m of candidates) {
      const g = m.apply(structuredClone(pg), input.info, rng, input.device ?? "cpu");
      if (!g) continue;
      const why = withinBudget(input, g, seen) ?? overBudget(input, parent, predictedSeconds(input, parent, g, pg), PROBE_SEEDS);
      if (why) {
        rejected.push(`${m.name}: ${why}`);
        continue;
      }
      // Without a surrogate yet, the first valid edit in the brief-first order wins.
      if (!surrogate) return proposalFrom(m, parent, g, index, hint, rejected);
      valid.push({ m, g, score: surrogate.score(genomeFeatures(g.model, g.train, input.params(g.model) as number)) });
    }
    // The surrogate picks within the bandit's surface; a brief concept breaks ties.
    const best = valid.sort((a, b) => b.score - a.score || conceptsOf(b.m).length - conceptsOf(a.m).length)[0];
    if (best) return proposalFrom(best.m, parent, best.g, index, hint, rejected, surrogateNote(valid));
  }
  return undefined;
};

/**
 * What the surrogate learns from: this run's finished rung-0 trials (scores
 * at other fidelities are not comparable), failures at the bottom.
 */
function rungZeroHistory(input: PlanInput): Observation[] {
  const out: Observation[] = [];
  let worst = Infinity;
  const failed: Array<{ g: Genome; params: number }> = [];
  for (const t of input.state.trials.values()) {
    if (!t.judged || rungOf(t) !== 0) continue;
    const g = genomeOf(t);
    const d = derivedOf(t);
    const params = g && (d.params ??= input.params(g.model));
    if (!g || typeof params !== "number") continue;
    const y = t.judged.verdict === Verdict.ACCEPT ? scoreOf(t) : undefined;
    if (y === undefined) failed.push({ g, params });
    else {
      worst = Math.min(worst, y);
      out.push({ x: genomeFeatures(g.model, g.train, params), y });
    }
  }
  const floor = (Number.isFinite(worst) ? worst : 0) - 0.05;
  for (const { g, params } of failed) out.push({ x: genomeFeatures(g.model, g.train, params), y: floor });
  return out;
}

function surrogateNote(valid: Array<{ m: Mutation; score: number }>): string {
  return `surrogate (TPE) ranked ${valid.map((v) => `${v.m.name} ${v.score.toFixed(2)}`).join(", ")}`;
}

function proposalFrom(
  m: Mutation,
  parent: TrialState,
  g: Genome,
  index: number,
  hint: Surface | undefined,
  rejected: string[],
  ranking?: string,
): Proposal {
  const score = scoreOf(parent);
  const notes = parent.evaluated?.analysis?.notes ?? [];
  return {
    rung: 0,
    seeds: PROBE_SEEDS,
    hypothesis: `${m.describe} on top of ${parent.id} (CI low ${score !== undefined ? (100 * score).toFixed(2) : "?"}%) improves validation accuracy`,
    rationale: [
      `trial ${index}: surface ${m.surface} chosen by the bandit${hint === m.surface ? " and the analyst's reading" : ""}`,
      ...(ranking ? [ranking] : []),
      // The analyst's advice backs the edit only when the edit follows it; otherwise the rationale says it went elsewhere.
      ...(hint === undefined || hint === m.surface
        ? notes.map((n) => `parent analysis: ${n}`)
        : [`the analyst's reading of the parent pointed to ${hint}; this edit is on ${m.surface}, which the bandit chose`]),
      ...(rejected.length ? [`skipped: ${rejected.slice(0, 5).join("; ")}`] : []),
    ].join("\n"),
    parentIds: [parent.id],
    surface: m.surface,
    model: { ...g.model, name: `${(g.model.name ?? "model").split("+")[0]}+${m.name}` },
    train: g.train,
  };
}

/**
 * A random template with a random recipe; no memory, no feedback. As the baseline it draws
 * the fidelity too; as the built-in brain's fallback (every edit of the good trials spent)
 * it is a one-seed probe at the run's probe fidelity, so it costs what a probe costs: a
 * fallback drawing three seeds and long epochs filled the last minutes of runs with
 * trainings that the reserve cut.
 */
function randomDraw(input: PlanInput, index: number, probe?: Fidelity): Proposal | undefined {
  const { rng, info } = input;
  const device = input.device ?? "cpu";
  const templates = templatesFor(info, device);
  const seen = tried(input.state);
  for (let attempt = 0; attempt < 20; attempt++) {
    const t = templates[Math.floor(rng() * templates.length)]!;
    const start = startingTrain(input);
    const subsets = start.subset ? [start.subset, start.subset * 2, start.subset * 4, 0] : [0];
    const train: TrainConfigInput = {
      ...start,
      optimizer: OPTIMIZER.names[Math.floor(rng() * OPTIMIZER.names.length)]!,
      lr: Math.exp(Math.log(3e-4) + rng() * (Math.log(1e-2) - Math.log(3e-4))),
      batch_size: BATCH_SIZES[device][Math.floor(rng() * 3)]!,
      epochs: probe?.epochs ?? 2 + Math.floor(rng() * 5),
      subset: probe?.subset ?? subsets[Math.floor(rng() * subsets.length)]!,
    };
    let g: Genome = { model: t.build(info, TEMPLATE_WIDTH[device]), train };
    // One coin for the draw (a coin per element could match neither).
    const width = rng() < 0.5 ? "widen" : "narrow";
    const widen = MUTATIONS.find((m) => m.name === width)!;
    if (rng() < 0.5) g = widen.apply(g, info, rng, input.device ?? "cpu") ?? g;
    if (withinBudget(input, g, seen)) continue;
    return {
      rung: 0,
      ...(probe && { seeds: PROBE_SEEDS }),
      hypothesis: `random draw: ${t.name}, ${train.optimizer} lr ${train.lr!.toExponential(1)}, ${train.epochs} epochs`,
      rationale: probe ? `trial ${index}: a random probe, since no edit of the good trials is left that fits` : `random planner, trial ${index}`,
      parentIds: [],
      surface: "architecture",
      model: g.model,
      train: g.train,
      };
  }
  return undefined;
};

/** The baseline's draw. */
export const randomPolicy: Policy = (input, index) => randomDraw(input, index);

/** The built-in brain's last resort: a random probe. */
export const fallbackProbe: Policy = (input, index) => randomDraw(input, index, probeFidelity(input));

const initialRandom = (input: PlanInput, count: number): Proposal[] =>
  Array.from({ length: count }, (_, k) => randomPolicy(input, k)).filter((p): p is Proposal => p !== undefined);

export const POLICIES = {
  builtin: { initial: initialBuiltin, next: nextBuiltin },
  random: { initial: initialRandom, next: randomPolicy },
};
