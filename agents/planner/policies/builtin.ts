/**
 * The built-in planner brain. The first proposals adopt what the brief suggests, as cheap rung-0
 * probes. After that, each proposal is either the multi-fidelity scheduler's move (promotion.ts:
 * the top 1/3 of a rung trains again on more data and epochs) or a new config: a UCB bandit over
 * the recipe surfaces (architecture, optimisation, regularisation) picks where the edit goes,
 * rewarding surfaces by the CI-lower-bound gains their trials measured, and the edit is applied
 * to the best rung-0 trial, so child and parent are compared at the same fidelity. Every
 * candidate is compiled (parameter budget), its time predicted from the run's measured speed
 * (time-model.ts: it must fit the trial budget and what the run has left after its reserve),
 * and dropped when an identical config (identity.ts) already ran here or failed anywhere in the
 * lineage.
 */
import type { Brief } from "../../../core/brief.js";
import { pct } from "../../../core/format.js";
import { PROBE_SEEDS, SEARCH_DEFAULTS } from "../../../core/defaults.js";
import { editOf, intoSpace, RECIPE_DEFAULTS, spaceOf } from "../../../core/space.js";
import { SURFACE, type SurfaceName as Surface } from "../../../core/enums.js";
import type { TrainConfigInput } from "../../../core/model-config.js";
import { Verdict } from "../../../proto/gen/research/v1/events_pb.js";
import type { RunState } from "../../../swarm/run-state.js";
import { isBaseline, isPromotion, rungOf, scoreOf, scoreText, type TrialState } from "../../../swarm/trial-state.js";
import { MUTATIONS, type EditEnv, type Genome, type Mutation } from "../mutations.js";
import type { Template } from "../../../core/tasks/task.js";
import { fitTpe, GENOME_SPACE, genomeFeatures, type Observation } from "../surrogate.js";
import { PROMOTION_SURFACE } from "../scheduler.js";
import type { PlanInput, Policy, Proposal } from "../types.js";
import { derivedOf, familyOf, fingerprint, genomeOf, tried } from "../identity.js";
import { timing } from "../time-model.js";
import { frontOf, pointOf, type Front } from "../../../swarm/front.js";
import { chebyshev, simplexWeights } from "../../../core/pareto.js";
import { editEnv, fitted, memoryFormat, startingTrain, withinBudget } from "../proposals.js";
import { searchTemplates } from "../../../core/tasks/fit.js";

/** Building blocks named by a brief, in the brief's order of relevance. */
function briefBlocks(briefs: Brief[]): string[] {
  return [...new Set(briefs.flatMap((b) => b.architectural_suggestions.flatMap((s) => s.building_blocks ?? [])))];
}

const DECAY = editOf("weight_decay").byOptimizer;
/** A brief's recipe concepts at the values the planner's edits set them to (core/space.ts rows). */
const RECIPE_FROM_BRIEF: Record<string, Partial<TrainConfigInput>> = {
  cosine_schedule: { schedule: "cosine" },
  label_smoothing: { label_smoothing: editOf("label_smoothing").to },
  adamw: { optimizer: "adamw", weight_decay: DECAY.adamw },
  weight_decay: { weight_decay: DECAY[RECIPE_DEFAULTS.optimizer] },
};

/**
 * The first proposals of a warm start: the strongest configs of past runs on this data (or data
 * that looks the same: past-runs.ts), at
 * most WARM_STARTS of them, each as this run's space, limits and budget allow it (one that does
 * not fit them is passed over, not changed) and not tried here yet. Each is evaluated here like
 * a template: its past score orders the candidates and never counts as a result of this run.
 *
 * For an open-ended goal only: a goal with a target is after the first config that meets it,
 * not the strongest, and the strongest past probe is often the largest and slowest. Run again in
 * the workspaces of the README goal's own runs, warm starts met it later in all three pairs
 * (+7 s, +311 s, +7 s: a 381k-parameter net first, then wider ones;
 * bench/results/search-series-82089db.json).
 */
function warmStarts(input: PlanInput, count: number, space: ReturnType<typeof spaceOf>, seen: Set<string>): Proposal[] {
  const out: Proposal[] = [];
  if (!input.state.goal?.openEnded) return out;
  const family = new Set(space.families);
  for (const past of input.pastConfigs ?? []) {
    if (out.length >= Math.min(count, WARM_STARTS)) break;
    if (family.size && !family.has(familyOf(past.model.name))) continue;
    const g = { model: structuredClone(past.model), train: intoSpace(space, { ...past.train, ...memoryFormat(input) }) };
    if (withinBudget(input, g, seen) ?? timing(input, g, PROBE_SEEDS).over) continue;
    seen.add(fingerprint(g.model, g.train));
    out.push({
      rung: 0,
      seeds: PROBE_SEEDS,
      hypothesis: `${g.model.name ?? "the model"} from past run ${past.runId} (${past.trialId}, CI low ${pct(past.ciLow)} there) is a strong start here`,
      rationale: "a warm start: the strongest config of a past run on this data (or data that looks the same) at this fidelity, evaluated again here; its past score is not this run's",
      parentIds: [],
      surface: "architecture",
      mutation: "warm_start",
      model: g.model,
      train: g.train,
      informedBy: [{ trialId: past.trialId, weight: past.weight }],
    });
  }
  return out;
}

/** Past configs a warm start proposes before the templates: the rest of the first proposals explore. */
const WARM_STARTS = 2;

/**
 * The starting families a run has probed, in any recipe; with `past`, also those past runs on
 * this data (or data that looks the same) probed, whose rung-0 scores the warm start has.
 */
function triedFamilies(input: PlanInput, past: boolean): Set<string> {
  const out = new Set<string>();
  for (const t of input.state.trials.values()) if (t.model && "name" in t.model && t.model.name) out.add(familyOf(t.model.name));
  if (past) for (const c of input.pastConfigs ?? []) if (c.model.name) out.add(familyOf(c.model.name));
  return out;
}

/**
 * Whether the policy probes every starting family once before it edits, and which families count
 * as probed: a Pareto goal's, this run's (each family is another trade-off on its own front); an
 * open-ended goal's from templates, this run's and its warm start's. An open-ended goal wants
 * the best model, and the brief's order of the templates is no guide to it: under a latency
 * limit it put se-cnn and resnet-small with label smoothing first, the two weakest CNNs at rung
 * 0 (81.9-84.3% and 82.5-84.1% validation where vgg-cnn read 88.6-89.4%, resnet-small with a
 * cosine schedule 87.5-87.9% and bn-cnn 87.3%, three Pareto runs that probed every family,
 * bench/results/search-series-a67a57b.json), and 1917cc1's latency-1, whose two were accepted,
 * edited se-cnn to the end (89.45% test against 92.1-92.3% for the runs that met resnet-small).
 * A goal with a target is after the first config that meets it, and a run from a person's model
 * is about that model: both edit from their first accepted trials.
 */
function freshFamilies(input: PlanInput, pareto: boolean): Set<string> | undefined {
  if (pareto) return triedFamilies(input, false);
  const { goal, start } = input.state;
  return goal?.openEnded && !start ? triedFamilies(input, true) : undefined;
}

/**
 * The run's first proposals: warm starts, then one starting template per family, as many as
 * `count`. `skip`: families not to propose (freshFamilies), and no warm starts.
 */
export const initialBuiltin = (input: PlanInput, count: number, skip?: Set<string>): Proposal[] => {
  const blocks = briefBlocks(input.state.briefs);
  const recipeBlocks = blocks.filter((b) => RECIPE_FROM_BRIEF[b]);
  const rank = (t: Template) => t.blocks.filter((b) => blocks.includes(b)).length;
  const device = input.device ?? "cpu";
  const space = spaceOf(input.state.settings?.space);
  const templates = searchTemplates(input.info, device, space.families)
    .map((t, i) => ({ t, i, r: rank(t) }))
    .sort((a, b) => b.r - a.r || a.i - b.i)
    .map((x) => x.t);
  const seen = tried(input.state);
  const out: Proposal[] = skip ? [] : warmStarts(input, count, space, seen);
  for (const t of templates) {
    if (out.length >= count) break;
    if (skip?.has(t.name)) continue;
    const recipe = recipeBlocks[out.length % Math.max(1, recipeBlocks.length)];
    // A family's own recipe stands; the brief's recipe knob goes to families without one.
    const knob = recipe && !t.recipe ? RECIPE_FROM_BRIEF[recipe] : undefined;
    const train = intoSpace(space, { ...startingTrain(input, t), ...knob });
    const g = fitted(input, { model: t.build(input.info, SEARCH_DEFAULTS[device].templateWidth), train });
    // A restart later in the run is timed from the measured trial closest in size.
    if (withinBudget(input, g, seen) ?? timing(input, g, PROBE_SEEDS).over) continue;
    seen.add(fingerprint(g.model, g.train));
    const used = [...t.blocks.filter((b) => blocks.includes(b)), ...(knob ? [recipe!] : [])];
    out.push({
      rung: 0,
      seeds: PROBE_SEEDS,
      hypothesis: `${t.name} with ${train.optimizer} lr ${Number(train.lr!.toPrecision(3))}${knob ? ` and ${recipe}` : ""} is a strong starting point`,
      rationale: `a starting template for this input shape${used.length ? `, chosen for the brief's ${used.join(", ")}` : ""}`,
      parentIds: [],
      surface: "architecture",
      mutation: "template",
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

/** A new rung-0 config: a bandit-chosen edit of a good rung-0 trial. */
export const nextBuiltin: Policy = (input, index) => {
  const { state, rng } = input;
  const accepted = [...state.trials.values()]
    .filter((t) => t.judged?.verdict === Verdict.ACCEPT && rungOf(t) === 0)
    .sort((a, b) => (scoreOf(b) ?? 0) - (scoreOf(a) ?? 0));
  // A run from a person's model edits its rung-0 anchor while the anchor still trains (trial 0
  // ends first when its recipe is short): a template in that slot would put the swarm's own
  // models before the one the run is about.
  const anchor = accepted.length === 0 ? [...state.trials.values()].find((t) => isBaseline(t) && rungOf(t) === 0 && !t.judged) : undefined;
  // Nothing works yet: restart from a template not tried so far.
  if (accepted.length === 0 && !anchor) return initialBuiltin(input, 1)[0];
  const front = frontOf(state);
  // Every starting family once before the first edit (freshFamilies), each in one recipe: 1805356's
  // pareto-0 probed two families and edited one of them to the end; dc836a7's probed mbconv-net
  // twice, in the brief's two recipes, 67 s a probe.
  const skip = freshFamilies(input, front !== undefined);
  const fresh = skip && initialBuiltin(input, 1, skip)[0];
  if (fresh) return fresh;
  // Mostly the best; sometimes a runner-up, so one lucky trial does not own the search. A
  // Pareto goal edits any trial of its front: the search moves along the front, not only
  // toward its most accurate end.
  const parent =
    anchor ??
    (front?.trials.length
      ? front.trials[Math.floor(rng() * front.trials.length)]!.t
      : rng() < 0.75
        ? accepted[0]!
        : accepted[Math.floor(rng() * Math.min(3, accepted.length))]!);
  const pg = genomeOf(parent);
  if (!pg) return undefined;
  const seen = tried(state);
  const hint = hintFrom(parent);
  const rejected: string[] = [];
  // The newest brief (a stall's narrower question, or the run's first) puts its concepts first.
  const brief = state.briefs[state.briefs.length - 1];
  const conceptsOf = (m: Mutation) => (brief?.architectural_suggestions ?? []).filter((s) => s.building_blocks?.some((b) => m.blocks.includes(b))).map((s) => s.name);
  // A Pareto goal's surrogate learns one scalarisation of the objectives per proposal (ParEGO):
  // the weights are drawn anew each time, so the proposals spread along the front. Past runs'
  // observations are scores of the metric alone, so they inform only a single-objective surrogate.
  const surrogate = fitTpe(GENOME_SPACE, front ? rungZeroHistory(input, scalarised(state, front, rng)) : [...rungZeroHistory(input), ...(input.pastObservations ?? [])]);
  const env = editEnv(input, parent);
  for (const surface of surfaceOrder(state, rng, hint)) {
    const candidates = shuffle(
      MUTATIONS.filter((x) => x.surface === surface),
      rng,
    ).sort((a, b) => conceptsOf(b).length - conceptsOf(a).length);
    const valid: Array<{ m: Mutation; g: Genome; score: number }> = [];
    for (const m of candidates) {
      const g = m.apply(structuredClone(pg), env);
      if (!g) continue;
      const why = withinBudget(input, g, seen, parent) ?? timing(input, g, PROBE_SEEDS, parent).over;
      if (why) {
        rejected.push(`${m.name}: ${why}`);
        continue;
      }
      // Without a surrogate yet, the first valid edit in the brief-first order wins.
      if (!surrogate) return proposalFrom(m, parent, g, env, index, hint, rejected);
      valid.push({ m, g, score: surrogate.score(genomeFeatures(g.model, g.train, input.params(g.model) as number)) });
    }
    // The surrogate picks within the bandit's surface; a brief concept breaks ties.
    const best = valid.sort((a, b) => b.score - a.score || conceptsOf(b.m).length - conceptsOf(a.m).length)[0];
    if (best) return proposalFrom(best.m, parent, best.g, env, index, hint, rejected, surrogateNote(valid));
  }
  return undefined;
};

/**
 * A Pareto goal's objectives as one number where higher is better: the augmented Chebyshev
 * scalarisation (core/pareto.ts) with weights drawn from `rng`, each axis normalised over the
 * run's rung-0 trials. Undefined for a trial missing an objective.
 */
function scalarised(state: RunState, front: Front, rng: () => number): (t: TrialState) => number | undefined {
  const { axes } = front;
  const points = front.points.map((x) => x.p);
  const weights = simplexWeights(axes.length, rng);
  const bounds = axes.map((a, i) => {
    const means = points.map((p) => p.values[i]!.mean);
    const [lo, hi] = [Math.min(...means), Math.max(...means)];
    // An axis on which the trials do not differ yet still needs a scale.
    const pad = hi > lo ? 0 : Math.max(1e-9, Math.abs(hi) * 1e-3);
    return a.higherIsBetter ? ([lo - pad, hi] as const) : ([hi + pad, lo] as const);
  });
  return (t) => {
    const p = pointOf(state, t);
    return p && chebyshev(p.values.map((v) => v.mean), axes, weights, bounds);
  };
}

/**
 * What the surrogate learns from: this run's finished rung-0 trials (scores
 * at other fidelities are not comparable), failures at the bottom. `value`
 * is an accepted trial's worth: its score, or a Pareto goal's scalarisation.
 */
function rungZeroHistory(input: PlanInput, value: (t: TrialState) => number | undefined = scoreOf): Observation[] {
  const out: Observation[] = [];
  let worst = Infinity;
  const failed: Array<{ g: Genome; params: number }> = [];
  for (const t of input.state.trials.values()) {
    if (!t.judged || rungOf(t) !== 0) continue;
    const g = genomeOf(t);
    const d = derivedOf(t);
    const params = g && (d.params ??= input.params(g.model));
    if (!g || typeof params !== "number") continue;
    const y = t.judged.verdict === Verdict.ACCEPT ? value(t) : undefined;
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
  env: EditEnv,
  index: number,
  hint: Surface | undefined,
  rejected: string[],
  ranking?: string,
): Proposal {
  const notes = parent.evaluated?.analysis?.notes ?? [];
  return {
    rung: 0,
    seeds: PROBE_SEEDS,
    hypothesis: `${m.explain?.(genomeOf(parent)!, g, env) ?? m.describe} on top of ${parent.id} (${parent.judged ? scoreText(parent) : "still training"}) improves validation ${parent.objective.label}`,
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
    mutation: m.name,
    model: { ...g.model, name: `${familyOf(g.model.name) || "model"}+${m.name}` },
    train: g.train,
  };
}
