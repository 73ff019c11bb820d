/** `/runs/:run`: one run, live while a swarm follows it. */
import { useState } from "preact/hooks";
import { COSTS, type CostName } from "../../../core/objective";
import type { EpochJson, InterventionReply, LiveMessage, RunDetail, TrialRow } from "../../api";
import { useJson, useLive } from "../data";
import { ci, count, duration, metric, objectiveOf, shortId, when, type Objective } from "../format";
import { CancelButton, ProposeForm, ReplyLine, RunControls, canIntervene } from "../interventions";
import { BestSoFar, Failures, Intervals, LineageTree, Parallel } from "../run-charts";
import { navigate, trialPath } from "../router";
import { FrontView } from "../front";
import { AgainstStartView } from "./against-start";
import { Fact, Loading, Outcome, Section, StatusBadge, TrialLinks } from "../ui";

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
      {r.findings.length > 0 && <Findings run={r} />}
      <Section title={`Trials (${r.trials_table.length})`} wide>
        <TrialTable o={o} run={r} progress={progress} live={live} onReply={onReply} />
      </Section>
      <RunCards o={o} run={r} live={live} onReply={onReply} />
    </>
  );
}

/** What the run found, each with the next step it suggests. */
function Findings({ run }: { run: RunDetail }) {
  return (
    <Section title="What the run found" wide testid="findings">
      <ul>
        {run.findings.map((f) => (
          <li key={f.kind}>
            {f.finding.replaceAll(`${run.run_id}-`, "")}: <span class="muted">{f.next}</span>
          </li>
        ))}
      </ul>
    </Section>
  );
}

/** The run's charts and tables below its trials. */
function RunCards({ o, run, live, onReply }: { o: Objective; run: RunDetail; live: boolean; onReply: (r: InterventionReply) => void }) {
  return (
    <div class="cards">
      <Section title="Lineage" wide testid="lineage">
        {run.trials_table.length ? <LineageTree run={run} /> : <p class="muted">No trials yet.</p>}
      </Section>
      <Section title={`Best so far (CI ${o.higherIsBetter ? "lower" : "upper"} bound) over time`}>
        <BestSoFar run={run} over="time" />
      </Section>
      <Section title="Best so far over trials">
        <BestSoFar run={run} over="trials" />
      </Section>
      <Section title={run.open_ended ? "95% intervals" : "Intervals against the target"}>
        <Intervals run={run} />
      </Section>
      <Section title="Features against the score" wide>
        <Parallel run={run} />
      </Section>
      <Section title="Failures by label">
        <Failures failures={run.failures} />
      </Section>
      {run.llm.length > 0 && (
        <Section title="LLM use by role">
          <LlmTable run={run} />
        </Section>
      )}
      <Section title={`Research briefs (${run.briefs.length})`} wide>
        <Briefs run={run} />
      </Section>
      <Section title={`Interventions (${run.interventions.length})`} wide>
        <Interventions run={run} />
      </Section>
      {live && (
        <Section title="Propose a trial" wide>
          <ProposeForm run={run} onReply={onReply} />
        </Section>
      )}
    </div>
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
        <Fact term="status">{<StatusBadge status={run.status} live={run.live} />}</Fact>
        <Fact term="best (val, 95% CI)" testid="run-best">{run.best ? <a href={trialPath(run.run_id, run.best.trial_id)}>{`${shortId(run.best.trial_id)}: ${ci(o, run.best.val)}`}</a> : "–"}</Fact>
        <Fact term="test" testid="run-test">{metric(o, run.best?.[`test_${o.metric}`])}</Fact>
        <Fact term="target">{run.open_ended ? "open-ended" : metric(o, run.target, 1)}</Fact>
        <Fact term="metric" testid="run-metric">
          {o.label}, {o.higherIsBetter ? "higher" : "lower"} is better
        </Fact>
        {run.trade_offs.length > 0 && <Fact term="traded off against" testid="run-trade-offs">{run.trade_offs.map((c) => (c in COSTS ? COSTS[c as CostName].label : c)).join(", ")}</Fact>}
        {run.max_latency_ms !== null && <Fact term="max latency" testid="run-max-latency">{run.max_latency_ms} ms per example</Fact>}
        <Fact term="trials">
          {run.judged} judged / {run.trials}
          {run.in_flight ? `, ${run.in_flight} in flight` : ""}
        </Fact>
        <Fact term="budget used">
          <span class="meter">
            <span style={{ width: `${used * 100}%` }} />
          </span>
          {duration(run.seconds)} / {duration(run.time_budget_s)}
        </Fact>
        {run.runner_jobs && <Fact term="runner jobs" testid="runner-jobs">{run.runner_jobs}</Fact>}
        <Fact term="dataset">{run.dataset}</Fact>
        <Fact term="started">{when(run.started_at)}</Fact>
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
                    <TrialLinks run={run.run_id} ids={s.adopted_by} />
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
