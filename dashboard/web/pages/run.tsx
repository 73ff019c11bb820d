/** `/runs/:run`: one run, live while a swarm follows it. */
import { useState } from "preact/hooks";
import { COSTS, type CostName } from "../../../core/objective";
import type { AgainstStart, EpochJson, InterventionReply, LiveMessage, PairedGain, RunDetail, TrialRow } from "../../api";
import { useJson, useLive } from "../data";
import { ci, count, duration, gain, metric, objectiveOf, shortId, when, type Objective } from "../format";
import { CancelButton, ProposeForm, ReplyLine, RunControls, canIntervene } from "../interventions";
import { BestSoFar, Failures, Intervals, LineageTree, Parallel } from "../run-charts";
import { navigate, trialPath } from "../router";
import { Diff } from "../diff";
import { FrontView } from "../front";
import { Loading, Outcome, Section, StatusBadge } from "../ui";

type Progress = EpochJson & { seed: number };

export function RunPage({ runId }: { runId: string }) {
  const run = useJson<RunDetail>(`/api/runs/${encodeURIComponent(runId)}`);
  // Per-epoch progress straight from the feed, newer than the last fetch's.
  const [progress, setProgress] = useState<Record<string, Progress>>({});
  const [reply, setReply] = useState<InterventionReply | null>(null);
  useLive(runId, (m: LiveMessage) => {
    if (m.type === "change") run.reload();
    else setProgress((p) => ({ ...p, [m.trial_id]: m }));
  });
  const onReply = (r: InterventionReply) => {
    setReply(r);
    run.reload();
  };

  const r = run.data;
  if (!r) return <Loading error={run.error} />;
  const o = objectiveOf(r.objective);
  const live = canIntervene(r);
  return (
    <>
      <RunHeader o={o} run={r} />
      {live && <RunControls run={r} onReply={onReply} />}
      <ReplyLine reply={reply} />
      {r.against_start && (
        <Section title="Against the starting point" wide testid="against-start">
          <AgainstStartView o={o} run={r} c={r.against_start} />
        </Section>
      )}
      {(r.warm_start.length > 0 || r.past_prior) && (
        <Section title="Started from past runs" wide testid="warm-start">
          <WarmStart o={o} run={r} />
        </Section>
      )}
      {(r.front || r.limits) && (
        <Section title={r.front ? `Pareto front: ${r.front.axes.map((a) => a.name).join(" vs ")}` : "Latency limit"} wide testid="front">
          <FrontView run={r} />
        </Section>
      )}
      {r.findings.length > 0 && (
        <Section title="What the run found" wide testid="findings">
          <ul>
            {r.findings.map((f) => (
              <li key={f.kind}>
                {f.finding.replaceAll(`${r.run_id}-`, "")}: <span class="muted">{f.next}</span>
              </li>
            ))}
          </ul>
        </Section>
      )}
      <Section title={`Trials (${r.trials_table.length})`} wide>
        <TrialTable o={o} run={r} progress={progress} live={live} onReply={onReply} />
      </Section>
      <div class="cards">
        <Section title="Lineage" wide testid="lineage">
          {r.trials_table.length ? <LineageTree run={r} /> : <p class="muted">No trials yet.</p>}
        </Section>
        <Section title={`Best so far (CI ${o.higherIsBetter ? "lower" : "upper"} bound) over time`}>
          <BestSoFar run={r} over="time" />
        </Section>
        <Section title="Best so far over trials">
          <BestSoFar run={r} over="trials" />
        </Section>
        <Section title={r.open_ended ? "95% intervals" : "Intervals against the target"}>
          <Intervals run={r} />
        </Section>
        <Section title="Features against the score" wide>
          <Parallel run={r} />
        </Section>
        <Section title="Failures by label">
          <Failures failures={r.failures} />
        </Section>
        {r.llm.length > 0 && (
          <Section title="LLM use by role">
            <LlmTable run={r} />
          </Section>
        )}
        <Section title={`Research briefs (${r.briefs.length})`} wide>
          <Briefs run={r} />
        </Section>
        <Section title={`Interventions (${r.interventions.length})`} wide>
          <Interventions run={r} />
        </Section>
        {live && (
          <Section title="Propose a trial" wide>
            <ProposeForm run={r} onReply={onReply} />
          </Section>
        )}
      </div>
    </>
  );
}

function RunHeader({ o, run }: { o: Objective; run: RunDetail }) {
  const used = run.time_budget_s > 0 ? Math.min(1, run.seconds / run.time_budget_s) : 0;
  return (
    <header class="run-head">
      <div class="crumbs">
        <a href="/runs">runs</a> / {run.run_id}
      </div>
      <h1>{run.goal}</h1>
      <dl class="facts">
        <div>
          <dt>status</dt>
          <dd>
            <StatusBadge status={run.status} live={run.live} />
          </dd>
        </div>
        <div>
          <dt>best (val, 95% CI)</dt>
          <dd data-testid="run-best">{run.best ? <a href={trialPath(run.run_id, run.best.trial_id)}>{`${shortId(run.best.trial_id)}: ${ci(o, run.best.val)}`}</a> : "–"}</dd>
        </div>
        <div>
          <dt>test</dt>
          <dd data-testid="run-test">{metric(o, run.best?.[`test_${o.metric}`])}</dd>
        </div>
        <div>
          <dt>target</dt>
          <dd>{run.open_ended ? "open-ended" : metric(o, run.target, 1)}</dd>
        </div>
        <div>
          <dt>metric</dt>
          <dd data-testid="run-metric">
            {o.label}, {o.higherIsBetter ? "higher" : "lower"} is better
          </dd>
        </div>
        {run.trade_offs.length > 0 && (
          <div>
            <dt>traded off against</dt>
            <dd data-testid="run-trade-offs">{run.trade_offs.map((c) => (c in COSTS ? COSTS[c as CostName].label : c)).join(", ")}</dd>
          </div>
        )}
        {run.max_latency_ms !== null && (
          <div>
            <dt>max latency</dt>
            <dd data-testid="run-max-latency">{run.max_latency_ms} ms per example</dd>
          </div>
        )}
        <div>
          <dt>trials</dt>
          <dd>
            {run.judged} judged / {run.trials}
            {run.in_flight ? `, ${run.in_flight} in flight` : ""}
          </dd>
        </div>
        <div>
          <dt>budget used</dt>
          <dd>
            <span class="meter">
              <span style={{ width: `${used * 100}%` }} />
            </span>
            {duration(run.seconds)} / {duration(run.time_budget_s)}
          </dd>
        </div>
        {run.runner_jobs && (
          <div>
            <dt>runner jobs</dt>
            <dd data-testid="runner-jobs">{run.runner_jobs}</dd>
          </div>
        )}
        <div>
          <dt>dataset</dt>
          <dd>{run.dataset}</dd>
        </div>
        <div>
          <dt>started</dt>
          <dd>{when(run.started_at)}</dd>
        </div>
      </dl>
      {run.reason && (
        <p class="reason" data-testid="run-reason">
          {run.reason}
        </p>
      )}
      <EndedBy run={run} />
      <details class="settings">
        <summary>settings{run.report_path ? ` · report at ${run.report_path}` : ""}</summary>
        <pre class="code">{JSON.stringify(run.settings, null, 2)}</pre>
      </details>
    </header>
  );
}

/** The trial whose judgement ended the run, with its own outcome: a trial stopped at the budget is not the run failing. */
function EndedBy({ run }: { run: RunDetail }) {
  const t = run.trials_table.find((r) => r.trial_id === run.ended_by);
  if (!t) return null;
  return (
    <p class="reason" data-testid="run-ended-by">
      last trial judged: <a href={trialPath(run.run_id, t.trial_id)}>{shortId(t.trial_id)}</a> · <Outcome verdict={t.verdict} failure={t.failure_label} status={t.status} />
      {t.failure_message && ` · ${t.failure_message.split("\n")[0]}`}
    </p>
  );
}

function ProgressCell({ o, row, live }: { o: Objective; row: TrialRow; live?: Progress }) {
  const p = live ?? row.progress;
  const running = row.status === "proposed" || row.status === "assembled";
  if (!p || !running) return <td class="progress" data-testid="progress-cell" />;
  const seed = live && live.seed > 0 ? ` s${live.seed}` : "";
  return (
    <td class="progress" data-testid="progress-cell" data-epoch={p.epoch}>
      <span class="meter">
        <span style={{ width: `${(p.epoch / Math.max(1, p.epochs)) * 100}%` }} />
      </span>
      {p.epoch}/{p.epochs}
      {seed} · {metric(o, p[o.key], 1)}
    </td>
  );
}

const fidelity = (f: TrialRow["fidelity"]) => `r${f.rung} · ${f.epochs} ep · ${f.subset ? count(f.subset) : "all"} · ×${f.seeds}`;

function TrialTable({ o, run, progress, live, onReply }: { o: Objective; run: RunDetail; progress: Record<string, Progress>; live: boolean; onReply: (r: InterventionReply) => void }) {
  if (!run.trials_table.length) return <p class="muted">No trials yet.</p>;
  const best = run.best?.trial_id;
  // Latency where the runner timed it: a column only once some trial has one.
  const timed = run.trials_table.some((t) => t.latency_ms !== null);
  return (
    <div class="scroll">
      <table class="grid trials" data-testid="trials-table">
        <thead>
          <tr>
            <th>#</th>
            <th>trial</th>
            <th>surface</th>
            <th>hypothesis</th>
            <th class="num">params</th>
            {timed && (
              <th class="num" title="milliseconds per example at batch 1, warm, on the device it ran on (the median of its seeds')">
                ms/ex
              </th>
            )}
            <th title="rung · epochs · training examples · seeds">fidelity</th>
            <th>progress</th>
            <th class="num">val (95% CI)</th>
            <th>outcome</th>
            {live && <th />}
          </tr>
        </thead>
        <tbody>
          {run.trials_table.map((t) => (
            <tr
              key={t.trial_id}
              data-testid="trial-row"
              data-trial={t.trial_id}
              data-status={t.status}
              class={`clickable${t.trial_id === best ? " best" : ""}`}
              onClick={(e) => !(e.target as Element).closest("a,button") && navigate(trialPath(run.run_id, t.trial_id))}
            >
              <td class="num muted">{t.index}</td>
              <td class="nowrap">
                <a href={trialPath(run.run_id, t.trial_id)}>{shortId(t.trial_id)}</a>
                {t.parent_ids.length > 0 && <span class="muted"> ← {t.parent_ids.map(shortId).join(", ")}</span>}
              </td>
              <td>{t.baseline ? <span class="tag" data-testid="baseline-tag" title="the run's starting point (launch --from)">{t.parent_ids.length ? "start, probe" : "start"}</span> : t.surface}</td>
              <td class="hyp" title={t.hypothesis}>
                {t.hypothesis}
              </td>
              <td class="num">{count(t.params)}</td>
              {timed && (
                <td class="num" data-testid="latency-cell">
                  {t.latency_ms === null ? "–" : Number(t.latency_ms.toPrecision(3))}
                </td>
              )}
              <td class="nowrap">{fidelity(t.fidelity)}</td>
              <ProgressCell o={o} row={t} live={progress[t.trial_id]} />
              <td class="num nowrap">{ci(o, t.val)}</td>
              <td title={t.failure_message ?? t.decision ?? ""}>
                <Outcome verdict={t.verdict} failure={t.failure_label} status={t.status} />
              </td>
              {live && <td>{(t.status === "proposed" || t.status === "assembled") && <CancelButton run={run.run_id} trialId={t.trial_id} onReply={onReply} />}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Briefs({ run }: { run: RunDetail }) {
  if (!run.briefs.length) return <p class="muted">No research brief (research off, or not back yet).</p>;
  return (
    <>
      {run.briefs.map((b) => (
        <div class="brief" key={b.request_id || b.title}>
          <h3>{b.title}</h3>
          {b.insights.length > 0 && (
            <ul>
              {b.insights.map((i) => (
                <li>{i}</li>
              ))}
            </ul>
          )}
          <table class="grid">
            <thead>
              <tr>
                <th>suggestion</th>
                <th>description</th>
                <th>adopted by</th>
              </tr>
            </thead>
            <tbody>
              {b.suggestions.map((s) => (
                <tr class={s.adopted_by.length ? "" : "muted"}>
                  <td class="nowrap">{s.name}</td>
                  <td>{s.description}</td>
                  <td>
                    {s.adopted_by.map((id, i) => (
                      <>
                        {i > 0 && ", "}
                        <a href={trialPath(run.run_id, id)}>{shortId(id)}</a>
                      </>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </>
  );
}

/** The report's "Against the starting point", from the same comparison (lineage-store/baseline.ts). */
function AgainstStartView({ o, run, c }: { o: Objective; run: RunDetail; c: AgainstStart }) {
  const link = (id: string) => <a href={trialPath(run.run_id, id)}>{shortId(id)}</a>;
  const head = (
    <p>
      Trial 0, {link(c.baseline_trial_id)}, is <code>{c.origin}</code> on its own recipe: validation {metric(o, c.baseline_val_mean)}, test {metric(o, c.baseline_test_mean)}.
    </p>
  );
  if (!c.best_trial_id || c.best_trial_id === c.baseline_trial_id) {
    return (
      <>
        {head}
        <p>{c.best_trial_id ? "No trial beat it: the starting point stays the best model." : "No trial accepted yet."}</p>
      </>
    );
  }
  const gainRow = (name: string, g: PairedGain | null) => (
    <tr data-testid={`gain-${name}`}>
      <td>{name}</td>
      {g ? (
        <>
          <td class="num">{metric(o, g.baseline_mean)}</td>
          <td class="num">{metric(o, g.best_mean)}</td>
          <td class="num">
            {gain(o, g.gain)} [{gain(o, g.ci_95[0])}, {gain(o, g.ci_95[1])}]
          </td>
          <td class="num">{g.p.toPrecision(2)}</td>
          <td class="num">{g.seeds.length}</td>
        </>
      ) : (
        <td colSpan={5} class="muted">
          not compared (fewer than two seeds measured on both)
        </td>
      )}
    </tr>
  );
  const changes = [
    ...c.recipe_changes.map((r) => ({ what: r.field, from: r.from, to: r.to })),
    ...c.argument_changes.map((r) => ({ what: `${r.name} (constructor)`, from: r.from, to: r.to })),
  ];
  return (
    <>
      {head}
      <p>The best trial {link(c.best_trial_id)} against it, seed by seed:</p>
      <table class="grid">
        <thead>
          <tr>
            <th />
            <th class="num">trial 0</th>
            <th class="num">best</th>
            <th class="num">gain [95% CI]</th>
            <th class="num">p</th>
            <th class="num">seeds</th>
          </tr>
        </thead>
        <tbody>
          {gainRow("validation", c.val)}
          {gainRow("test", c.test)}
        </tbody>
      </table>
      {changes.length > 0 ? (
        <table class="grid" data-testid="start-changes">
          <thead>
            <tr>
              <th>what changed</th>
              <th>trial 0</th>
              <th>best</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((x) => (
              <tr>
                <td class="nowrap">{x.what}</td>
                <td>{JSON.stringify(x.from)}</td>
                <td>{JSON.stringify(x.to)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">The recipe and the model's arguments are trial 0's.</p>
      )}
      {c.path ? (
        <table class="grid" data-testid="start-path">
          <thead>
            <tr>
              <th>trial</th>
              <th>move</th>
              <th>hypothesis</th>
              <th class="num">rung</th>
              <th class="num">val</th>
              <th class="num">change</th>
            </tr>
          </thead>
          <tbody>
            {c.path.map((p) => (
              <tr>
                <td>{link(p.trial_id)}</td>
                <td>
                  <span class="tag">{p.mutation}</span>
                </td>
                <td>{p.hypothesis}</td>
                <td class="num">{p.rung}</td>
                <td class="num">{metric(o, p.val_mean)}</td>
                <td class="num">{p.change === null ? "–" : `${gain(o, p.change)}${p.same_fidelity ? "" : " (fidelity)"}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p>
          The best trial does not descend from trial 0: the search found it from {c.best_root ? link(c.best_root.trial_id) : "elsewhere"}
          {c.best_root ? ` (${c.best_root.mutation})` : ""}.
        </p>
      )}
      {c.model_diff ? <Diff text={c.model_diff} testid="start-diff" /> : <p class="muted">The model's code is trial 0's.</p>}
      <p class="muted">Rule: {c.rule}.</p>
    </>
  );
}

function LlmTable({ run }: { run: RunDetail }) {
  return (
    <table class="grid">
      <thead>
        <tr>
          <th>role</th>
          <th class="num">calls</th>
          <th class="num">prompt tokens</th>
          <th class="num">completion tokens</th>
          <th class="num">cost</th>
        </tr>
      </thead>
      <tbody>
        {run.llm.map((l) => (
          <tr>
            <td>{l.role}</td>
            <td class="num">{l.calls}</td>
            <td class="num">{count(l.prompt_tokens)}</td>
            <td class="num">{count(l.completion_tokens)}</td>
            <td class="num">${l.cost_usd.toFixed(3)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The trials whose configs came from past runs, each linked to where it came from, with how it did here. */
function WarmStart({ o, run }: { o: Objective; run: RunDetail }) {
  return (
    <>
      <p class="muted">
        What this run took from past runs. A past result weighs ½·e<sup>−d</sup>, d the distance between its dataset and this one (0: the same description); each of this run's own results weighs 1. No past score counts in this run.
      </p>
      {run.past_prior && (
        <p data-testid="past-prior">
          The surrogate held up to {run.past_prior.observations} past results as prior observations (summed weight {run.past_prior.weight.toFixed(2)}) when it proposed {run.past_prior.trials} of this run's trials.
        </p>
      )}
      {run.warm_start.length > 0 && (
        <table class="grid" data-testid="warm-start-table">
          <thead>
            <tr>
              <th>trial</th>
              <th>from</th>
              <th>takes</th>
              <th>here</th>
              <th>verdict</th>
            </tr>
          </thead>
          <tbody>
            {run.warm_start.map((w) => (
              <tr key={w.trial_id}>
                <td>
                  <a href={trialPath(run.run_id, w.trial_id)}>{shortId(w.trial_id)}</a>
                </td>
                <td>
                  {w.past.map((p, k) => (
                    <>
                      {k > 0 && ", "}
                      <a href={trialPath(p.run_id, p.trial_id)}>{p.trial_id}</a>
                      {p.weight !== null && ` (weight ${p.weight.toFixed(2)})`}
                    </>
                  ))}
                </td>
                <td>{w.takes === "weights" ? "trained weights" : "config"}</td>
                <td>{w.val ? ci(o, w.val) : "–"}</td>
                <td>{w.verdict ?? "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function Interventions({ run }: { run: RunDetail }) {
  if (!run.interventions.length) return <p class="muted">None: the swarm ran on its own.</p>;
  return (
    <table class="grid" data-testid="interventions-table">
      <thead>
        <tr>
          <th>when</th>
          <th>kind</th>
          <th>who</th>
          <th>trial</th>
          <th>reason / hypothesis</th>
          <th>taken by</th>
        </tr>
      </thead>
      <tbody>
        {run.interventions.map((i) => (
          <tr key={i.intervention_id}>
            <td class="nowrap">{when(i.at)}</td>
            <td>{i.kind.replace(/_/g, " ")}</td>
            <td>{i.who}</td>
            <td>{i.trial_id && <a href={trialPath(run.run_id, i.trial_id)}>{shortId(i.trial_id)}</a>}</td>
            <td>{[i.reason, i.hypothesis].filter(Boolean).join(" · ")}</td>
            <td>{i.taken_by && <a href={trialPath(run.run_id, i.taken_by)}>{shortId(i.taken_by)}</a>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
