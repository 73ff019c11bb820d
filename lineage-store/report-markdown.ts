/**
 * report.md: the report's document (report-json.ts) as one Markdown page for people, a section
 * per function, prose wrapped and trials named by their short id.
 */
import { COSTS, formatChange, formatHalfWidth, formatMetric, type Objective } from "../core/objective.js";
import type { RunState } from "../swarm/run-state.js";
import { int, jobsText, points } from "../core/format.js";
import { RUN_STATUS } from "../core/enums.js";
import type { RunFinished } from "../proto/gen/research/v1/events_pb.js";
import { duration, PLOT_FILES, short, type ReportJson } from "./report-json.js";
import { bestTrialLines } from "./report-best-model.js";
import { cell, inline, meanPlusMinus, meanWithCi, table } from "./report-text.js";

/**
 * A hypothesis's outcome in the trials table: the change, the smallest change the trials could
 * resolve, the examples compared one by one where they were, and the pair compared where it is promotions.
 */
function heldText(h: { outcome: string; parent_id: string; trial_ids: readonly string[]; change: number; detectable: number; paired_examples: number }, trialId: string, o: Objective): string {
  const [own, theirs] = h.trial_ids;
  const at = own === trialId && theirs === h.parent_id ? "" : `, at ${own} vs ${theirs}`;
  const paired = h.paired_examples ? ` over ${int(h.paired_examples)} examples paired` : "";
  return `${h.outcome} (${formatChange(o, h.change)}; ±${formatHalfWidth(o, h.detectable)}${paired}${at})`;
}

/** The best model against the run's starting point: the gain seed by seed, what changed, and the path that changed it. */
function baselineSection(c: NonNullable<ReportJson["baseline"]>, o: Objective): string[] {
  const show = (v: number | null) => (v !== null ? formatMetric(o, v) : "not measured");
  const change = (x: number) => formatChange(o, x);
  const out = ["## Against the starting point", "", `Trial 0, \`${c.baseline_trial_id}\`, is ${inline(c.origin)} on its own recipe: validation ${show(c.baseline_val_mean)}, test ${show(c.baseline_test_mean)}.`, ""];
  if (!c.best_trial_id || c.best_trial_id === c.baseline_trial_id) {
    out.push(c.best_trial_id ? "No trial beat it: the starting point stays the best model." : "No trial was accepted.", "");
    return out;
  }
  const gain = (name: string, g: typeof c.val) =>
    g
      ? `- ${name}: ${show(g.baseline_mean)} -> ${show(g.best_mean)}, ${change(g.gain)} (95% CI ${change(g.ci_95[0])} to ${change(g.ci_95[1])}, p = ${g.p.toPrecision(2)}, ${g.seeds.length} seeds paired)`
      : `- ${name}: not compared (fewer than two seeds measured on both)`;
  out.push(`The best trial \`${c.best_trial_id}\` against it, seed by seed:`, "", gain(`validation ${o.label}`, c.val), gain(`test ${o.label}`, c.test), "");
  out.push(`Rule: ${inline(c.rule)}.`, "");
  if (c.recipe_changes.length) {
    out.push("What changed in the recipe:", "", ...table(["field", "trial 0", "best"], c.recipe_changes.map((r) => [cell(r.field), cell(JSON.stringify(r.from)), cell(JSON.stringify(r.to))])), "");
  } else out.push("The recipe is trial 0's.", "");
  if (c.argument_changes.length) {
    out.push("What changed in the model's constructor arguments:", "", ...table(["argument", "trial 0", "best"], c.argument_changes.map((r) => [cell(r.name), cell(JSON.stringify(r.from)), cell(JSON.stringify(r.to))])), "");
  }
  if (!c.path) out.push(`The best trial does not descend from trial 0: the search found it from ${c.best_root ? `\`${c.best_root.trial_id}\` (${cell(c.best_root.mutation)})` : "elsewhere"}, after the starting point's edits fell behind.`, "");
  else {
    out.push(
      "How it got there (each trial from its parent; a change between fidelities is the longer training's as much as the edit's):",
      "",
      ...table(
        ["trial", "move", "hypothesis", "rung", "seeds", o.proportion ? "val acc" : `val ${o.label}`, "change"],
        c.path.map((p) => [`\`${p.trial_id}\``, cell(p.mutation), cell(short(p.hypothesis, 90)), String(p.rung), String(p.seeds), p.val_mean !== null ? formatMetric(o, p.val_mean) : "—", p.change !== null ? `${change(p.change)}${p.same_fidelity ? "" : " (fidelity)"}` : "—"]),
      ),
      "",
    );
  }
  out.push(c.model_diff ? "The model's code against trial 0's:" : "The model's code is trial 0's.", "");
  if (c.model_diff) out.push("```diff", c.model_diff.trimEnd(), "```", "");
  return out;
}

function frontSection(f: NonNullable<ReportJson["front"]>, o: Objective): string[] {
  // The metric in its units with its interval, a count as a count, a measured cost with its spread.
  const value = (v: { mean: number; low: number; high: number }, i: number) =>
    i === 0
      ? `${formatMetric(o, v.mean)} [${formatMetric(o, v.low)}, ${formatMetric(o, v.high)}]`
      : f.axes[i]!.name === COSTS.params.label
        ? int(Math.round(v.mean))
        : `${v.mean.toPrecision(3)} [${v.low.toPrecision(3)}, ${v.high.toPrecision(3)}]`;
  const out = ["## Pareto front", "", `The front: ${inline(f.rule)}.`, ""];
  if (!f.trials.length) return [...out, "No trial is on the front yet.", ""];
  out.push(
    ...table(
      ["trial", ...f.axes.map((a, i) => `${i === 0 ? `val ${o.label}` : a.name} (${a.higher_is_better ? "higher" : "lower"} is better)`), "crowding"],
      f.trials.map((t) => [`\`${t.trial_id}\`${t.trial_id === f.knee ? " (knee)" : ""}`, ...t.values.map(value), t.crowding === null ? "extreme" : t.crowding.toFixed(2)]),
    ),
    "",
  );
  if (f.knee) out.push(`The knee, the balanced trade-off (the front's point closest to the ideal once each objective is scaled to the front's range): \`${f.knee}\`.`, "");
  for (const l of f.trained_long) {
    const cost = [l.params !== null ? `${int(l.params)} parameters` : "", l.latency_ms !== null ? `${l.latency_ms.toPrecision(3)} ms per example` : ""].filter(Boolean).join(", ");
    const dominated = l.on_front ? "" : " (dominated by another long training)";
    out.push(`- \`${l.trial_id}\` trained \`${l.from}\` on the full training split with the run's seeds: validation ${meanPlusMinus(l.val, o)}, test ${l.test ? meanPlusMinus(l.test, o) : "not measured"}${cost ? `; ${cost}` : ""}${dominated}`);
  }
  if (f.trained_long.length) out.push("");
  out.push(`![Pareto front](${f.plot})`, "");
  return out;
}

function limitsSection(l: NonNullable<ReportJson["limits"]>): string[] {
  const ids = (xs: string[]) => (xs.length ? xs.map((id) => `\`${id}\``).join(", ") : "none");
  return [
    "## Limits",
    "",
    `Latency at most ${l.max_latency_ms} ms per example (batch 1, warm, on the runner's device; a trial's latency is the fastest seed median the run timed for its model, since a slot training beside a timing only slows it). A trial over it is labelled over_limit and not accepted (by the runner before it trains when its untrained model is timed over the limit by more than 25%, else by the judge on its trained model's timing), so the best trial is the best within every limit.`,
    "",
    `- Within the limit: ${l.within.length} (${ids(l.within)})`,
    `- Over it: ${l.over.length} (${ids(l.over)})`,
    `- The best within every limit: ${l.best_within ? `\`${l.best_within}\`` : "none"}`,
    "",
  ];
}

function goalSection(j: ReportJson, o: Objective): string[] {
  const out = ["## Goal", ""];
  if (!j.goal) return [...out, "No run_started event was recorded.", ""];
  const show = (v: number) => formatMetric(o, v);
  if (j.goal.raw_text) out.push(`> ${inline(j.goal.raw_text)}`, "");
  if (j.goal.description) out.push(`Understood as: ${inline(j.goal.description)}.`, "");
  out.push(
    ...table(
      ["", ""],
      [
        ["dataset", cell(j.goal.dataset || "—")],
        ["metric", cell(j.goal.metric)],
        ["target", j.goal.target ? show(j.goal.target) : j.goal.open_ended ? "none (open-ended: the best model within the limits)" : "none"],
        ["max parameters", j.goal.max_params ? int(j.goal.max_params) : "no limit"],
        ["max latency", j.goal.max_latency_ms ? `${j.goal.max_latency_ms} ms per example (batch 1, on the runner's device)` : "no limit"],
        ...(j.goal.trade_offs.length ? [["Pareto objectives", `${o.label} vs ${j.goal.trade_offs.map((c) => COSTS[c].label).join(" vs ")}`]] : []),
        ["time budget", j.goal.time_budget_s ? duration(j.goal.time_budget_s) : "no limit"],
      ],
    ),
    "",
  );
  return out;
}

/** The outcome: the run's status and time, its runner jobs, an open-ended run's answer, then its best trial. */
function outcomeSection(state: RunState, finished: RunFinished, j: ReportJson): string[] {
  const o = state.objective;
  const out = ["## Outcome", "", `**Status:** ${cell(RUN_STATUS.name(finished.status) ?? "unknown")}${finished.reason ? `: ${inline(finished.reason)}` : ""}`, ""];
  out.push(`Trials judged: ${j.outcome.trials}; run time: ${duration(finished.seconds)}${state.resumes.length ? " live (the time between an interruption and its resume is not counted)" : ""}.`, "");
  for (const r of j.outcome.resumes) {
    out.push(`- Interrupted, then resumed at ${duration(r.at_s)} of live time after ${duration(r.downtime_s)} down${r.time_budget_s ? `; the time budget became ${duration(r.time_budget_s)}` : ""}.`);
  }
  if (j.outcome.resumes.length) out.push("");
  const jobs = state.runnerJobs;
  if (jobs) out.push(`Runners: Slurm jobs, ${jobsText(jobs)} when last recorded${jobs.ended ? " (a job that ended while the run had budget left was submitted again)" : ""}.`, "");
  const b = j.outcome.best_trial;
  if (j.goal?.open_ended) {
    // With no target, the run's answer is the best model itself; say so before the details.
    const found = b?.val ? `the best model found is \`${b.trial_id}\`, validation ${o.label} ${meanWithCi(b.val, o)}` : "no model was accepted";
    const test = b?.test?.metrics[`test_${o.metric}`];
    const ensemble = b?.test?.metrics[`ensemble_test_${o.metric}`];
    out.push(
      `No target was set, so there is no goal to meet or miss: ${found}${test ? `; test ${o.label}, measured once on the held-out test split: ${meanWithCi(test, o)}` : ""}${ensemble ? ` per seed, ${meanWithCi(ensemble, o)} for the ensemble of its ${b!.test!.num_seeds} seeds` : ""}.`,
      "",
    );
  }
  return [...out, ...(b ? bestTrialLines(b, finished, j, o) : ["No trial was accepted.", ""])];
}

function trialsSection(state: RunState, j: ReportJson): string[] {
  const o = state.objective;
  return [
    "## Trials",
    "",
    `![score per trial](${PLOT_FILES.scores})`,
    "",
    ...table(
      ["#", "trial", "surface", "hypothesis", "params", o.proportion ? "val acc (mean ± 95% CI, pp)" : `val ${o.label} (mean ± 95% CI)`, "seeds x val examples", "held?", "verdict", "failure", "eval time"],
      j.trials.map((r) => [
        String(r.position),
        `\`${r.trial_id}\`${r.best ? " ★" : ""}`,
        cell(r.surface || "—"),
        cell(short(shortIds(r.hypothesis, state.runId)) || "—"),
        r.params !== null ? int(r.params) : "—",
        meanPlusMinus(r.val, o),
        r.num_seeds ? `${r.num_seeds} x ${r.val_examples ? int(r.val_examples) : "?"}` : "—",
        r.promotion ? "promotion" : r.hypothesis_outcome ? shortIds(heldText(r.hypothesis_outcome, r.trial_id, o), state.runId) : "—",
        // A trial that failed (cancelled at the run's end) is never judged: its failure says why.
        r.verdict ?? (r.failure_label ? "—" : "pending"),
        r.failure_label ?? "",
        r.eval_seconds !== null ? duration(r.eval_seconds) : "—",
      ]),
    ),
    "",
    `"held?" is whether the trial's hypothesis held (core/ranking.ts): the change of its validation mean from its first parent's, both trained at the same examples and epochs, at the highest such fidelity both configs reached (the two trials, or promotions of both, named after "at" where they are), with a 95% interval: where both scored the same validation examples and say which they got right (a classifier; "over N examples paired"), from the examples the two disagree on (McNemar's test) with each trial's seed spread, else from the two trials' intervals; supported when the interval is all gain, refuted when all loss, else inconclusive; after ± the smallest change the two trials could resolve (the interval's half-width), so an inconclusive edit smaller than it is one the trials were too small to see; a promotion trains the same config on more data, epochs or seeds and tests no hypothesis. "verdict" is the judge's: accept means the trial ran and its score counts towards the best, whether or not its change helped.`,
    "",
  ];
}

function failuresSection(j: ReportJson): string[] {
  const failures = Object.entries(j.failures);
  return [
    "## Failures by label",
    "",
    ...(failures.length ? [...table(["label", "trials"], failures.map(([label, n]) => [label, String(n)])), "", `![failures by label](${PLOT_FILES.failures})`, ""] : ["No trial failed.", ""]),
  ];
}

function surfacesSection(j: ReportJson, o: Objective): string[] {
  const show = (v: number) => formatMetric(o, v);
  return [
    "## Surfaces",
    "",
    ...table(
      ["surface", "trials", "promotions", "accepted", "supported", "refuted", "failed", o.proportion ? "mean gain of edits (pp)" : `mean gain of edits (${o.label}, + is better)`, o.proportion ? "best val acc" : `best val ${o.label}`],
      j.surfaces.map((s) => [
        cell(s.surface),
        String(s.trials),
        String(s.promotions),
        String(s.accepted),
        String(s.supported),
        String(s.refuted),
        String(s.failed),
        s.mean_gain !== null ? `${s.mean_gain >= 0 ? "+" : ""}${o.proportion ? points(s.mean_gain) : show(s.mean_gain)}` : "—",
        s.best_val !== null ? show(s.best_val) : "—",
      ]),
    ),
    "",
  ];
}

function timelineSection(j: ReportJson): string[] {
  const when = (m: ReportJson["timeline"]["first_accepted"]) =>
    m ? `\`${m.trial_id}\`, after ${m.trials_judged} judged trial${m.trials_judged === 1 ? "" : "s"}${m.seconds !== null ? ` and ${duration(m.seconds)}` : ""}` : "never";
  return [
    "## Timeline",
    "",
    `- First accepted trial: ${when(j.timeline.first_accepted)}`,
    ...(j.goal?.open_ended ? [] : [`- Goal reached: ${when(j.timeline.goal_reached)}`]),
    `- Run finished after ${duration(j.timeline.total_seconds)}`,
    "",
  ];
}

function briefsSection(j: ReportJson): string[] {
  const out = ["## Research briefs", ""];
  if (j.research.briefs.length) {
    for (const brief of j.research.briefs) {
      out.push(`### ${inline(brief.title)}`, "");
      for (const i of brief.insights) out.push(`- ${inline(i)}`);
      for (const s of brief.suggestions) {
        out.push(`- Suggestion **${inline(s.name)}**: ${s.adopted_by.length ? `adopted by ${s.adopted_by.map((id) => `\`${id}\``).join(", ")}` : "not adopted"}`);
      }
      if (brief.sources.length) out.push(`- Sources: ${brief.sources.map((src) => `[${inline(src.title).replace(/[[\]]/g, "")}](${encodeURI(src.url)})`).join("; ")}`);
      out.push("");
    }
  } else out.push("No research brief was used.", "");
  const adopted = Object.entries(j.research.adopted_concepts);
  if (adopted.length) {
    out.push(...table(["concept adopted", "trials"], adopted.map(([c, ids]) => [cell(c), ids.map((id) => `\`${id}\``).join(", ")])), "");
  }
  return out;
}

function warmStartSection(j: ReportJson, o: Objective): string[] {
  const warm = j.trials.filter((r) => r.informed_by.length);
  const prior = j.past_prior;
  if (!warm.length && !prior) return [];
  const out = ["## Warm start", ""];
  out.push("What this run took from past runs (launch --no-warm-start turns this off). A past result weighs 1/2 x exp(-d), d the distance between its dataset and this run's (0: the same description); each of this run's own results weighs 1. No past score counts as this run's.", "");
  if (prior) {
    out.push(`- The surrogate held up to ${prior.observations} past results as prior observations (summed weight ${prior.weight.toFixed(2)}) when it proposed ${prior.trials} of this run's trials.`, "");
  }
  if (warm.length) {
    const from = (r: (typeof warm)[number]) => r.informed_by.map((id, i) => `\`${id}\`${r.informed_weights[i] === undefined ? "" : ` (weight ${r.informed_weights[i]!.toFixed(2)})`}`).join(", ");
    out.push("Trials that start from a past run's config, or continue its training from the weights it kept, each evaluated here:", "");
    out.push(...table(["trial", "from past trials", "takes", "here: val (mean ± 95% CI)", "verdict"], warm.map((r) => [`\`${r.trial_id}\``, from(r), r.init_weights ? "trained weights" : "config", meanPlusMinus(r.val, o), r.verdict ?? "—"])), "");
  }
  const chained = j.trials.filter((r) => r.init_weights && !r.informed_by.length);
  for (const r of chained) out.push(`- \`${r.trial_id}\` continues the training of \`${r.init_weights!.trial_id}\` from its kept weights.`);
  if (chained.length) out.push("");
  return out;
}

function llmSection(j: ReportJson): string[] {
  const llmRoles = Object.entries(j.llm.per_role);
  if (!llmRoles.length) return ["## LLM use", "", "No LLM was used: the built-in brain drove every role.", ""];
  return [
    "## LLM use",
    "",
    ...table(
      ["role", "calls", "HTTP requests", "prompt tokens", "completion tokens", "latency", "cost (USD)", "repaired", "fell back"],
      llmRoles.map(([role, r]) => [role, String(r.calls), String(r.requests), String(r.prompt_tokens), String(r.completion_tokens), `${(r.latency_ms / 1000).toFixed(1)} s`, r.cost_usd.toFixed(4), String(r.repaired), String(r.fallbacks)]),
    ),
    "",
    ...j.llm.fallbacks.map((f) => `- ${f.role}/${f.purpose} fell back to the built-in brain: ${inline(f.error)}`),
    "",
  ];
}

function interventionsSection(j: ReportJson): string[] {
  if (!j.interventions.length) return [];
  return [
    "## Interventions",
    "",
    ...table(
      ["what", "who", "trial", "reason or hypothesis"],
      j.interventions.map((v) => [v.kind, cell(v.who), v.trial_id ? `\`${v.trial_id}\`` : v.taken_by ? `became \`${v.taken_by}\`` : "", cell(v.hypothesis ?? v.reason)]),
    ),
    "",
  ];
}

function spaceAndSettingsSections(j: ReportJson): string[] {
  return [
    "## Search space",
    "",
    j.search_space.length
      ? `Narrowed with --space: ${j.search_space.map(inline).join("; ")}. Every other dimension kept the built-in table's range (core/space.ts); a proposal outside the space was never made.`
      : "The built-in space: every dimension of core/space.ts at the table's range, every template family for this data.",
    "",
    "## Settings",
    "",
    ...(j.settings ? [...table(["setting", "value"], Object.entries(j.settings).map(([k, v]) => [k, cell(String(v)) || "—"])), ""] : ["Not recorded.", ""]),
  ];
}

function nextStepsSection(state: RunState, j: ReportJson): string[] {
  const n = j.next_steps;
  return [
    "## Next steps",
    "",
    ...(n.findings.length
      ? ["What the run found, and the experiment each suggests:", "", ...n.findings.map((f) => `- ${inline(shortIds(f.finding, state.runId))}: ${inline(f.next)}.`), "", "Where it stands:", ""]
      : []),
    ...(n.budget_left_s !== null ? [`- Time budget left: ${duration(n.budget_left_s)}`] : []),
    `- Trials proposed and not judged: ${n.pending.length ? n.pending.map((p) => `\`${p.trial_id}\` (${inline(short(shortIds(p.hypothesis, state.runId), 60))})`).join(", ") : "none"}`,
    `- Confirmation: ${inline(n.confirmation)}`,
    `- Weights: ${inline(n.weights)}`,
    `- To go on: \`${n.command}\``,
    "",
  ];
}

/** The report as Markdown: a section per function above, in the order a reader wants them. */
export function markdownOf(state: RunState, finished: RunFinished, j: ReportJson): string {
  const o = state.objective;
  return [
    `# Research report: ${inline(state.runId)}`,
    "",
    ...goalSection(j, o),
    ...outcomeSection(state, finished, j),
    ...(j.front ? frontSection(j.front, o) : []),
    ...(j.limits ? limitsSection(j.limits) : []),
    ...(j.baseline ? baselineSection(j.baseline, o) : []),
    ...trialsSection(state, j),
    ...failuresSection(j),
    ...surfacesSection(j, o),
    ...timelineSection(j),
    ...briefsSection(j),
    ...warmStartSection(j, o),
    ...llmSection(j),
    ...interventionsSection(j),
    ...spaceAndSettingsSections(j),
    ...nextStepsSection(state, j),
  ].join("\n");
}

/** Trial ids of the run in `text` by their number alone (`t014`), as the report names them after its title. */
const shortIds = (text: string, runId: string) => text.replaceAll(`${runId}-t`, "t");

/** The longest line of prose the report writes; tables and code keep their lines. */
const LINE_WIDTH = 100;

/**
 * The report as a person reads it: each trial by its short id (`t014`) once the title has named
 * the run, and prose wrapped at LINE_WIDTH (a list item's or a quote's continuation indented as
 * Markdown keeps it in the item). Tables, code blocks and headings keep their lines.
 */
export function readable(markdown: string, runId: string): string {
  const [title, ...rest] = markdown.split("\n");
  const body = shortIds(rest.join("\n"), runId);
  const out: string[] = [title!, "", `Trials are named by their number in the run: \`t003\` is \`${runId}-t003\`.`];
  let code = false;
  for (const line of body.split("\n")) {
    if (line.startsWith("```") || line.trimStart().startsWith("```")) code = !code;
    if (code || line.length <= LINE_WIDTH || /^\s*(\||#|!\[)/.test(line) || line.trimStart().startsWith("```")) {
      out.push(line);
      continue;
    }
    const lead = /^(\s*(?:[-*] |\d+\. |> )?)/.exec(line)![1]!;
    const indent = lead.startsWith(">") ? "> " : " ".repeat(lead.length);
    let current = lead;
    // A code span (a command, a path) is one word: wrapped inside, it would not paste.
    for (const word of line.slice(lead.length).match(/\S*`[^`]*`\S*|\S+/g) ?? []) {
      if (current.trim() && current.length + 1 + word.length > LINE_WIDTH) {
        out.push(current);
        current = indent + word;
      } else current += (current === lead || current === indent ? "" : " ") + word;
    }
    out.push(current);
  }
  return out.join("\n");
}
