/** `/runs/:run/trials/:trial`: everything about one trial. */
import { useMemo } from "preact/hooks";
import type { RunDetail, TrialDetail } from "../../api";
import { Chart, type Option } from "../chart";
import { SeedCurvesChart } from "../curves";
import { useJson, useLive } from "../data";
import { Diff } from "../diff";
import { ci, count, esc, metric, objectiveOf, pct, plural, pretty, shortId, title, type Objective } from "../format";
import { comparePath, navigate, runPath } from "../router";
import { Fact, Json, Loading, Outcome, Section, TrialLinks } from "../ui";

export function TrialPage({ runId, trialId }: { runId: string; trialId: string }) {
  const trial = useJson<TrialDetail>(`/api/runs/${encodeURIComponent(runId)}/trials/${encodeURIComponent(trialId)}`);
  const run = useJson<RunDetail>(`/api/runs/${encodeURIComponent(runId)}`);
  useLive(runId, (m) => {
    if (m.type !== "change") return;
    run.reload();
    if (m.trial_id === trialId) trial.reload();
  });
  const t = trial.data;
  if (!t) return <Loading error={trial.error} />;
  const o = objectiveOf(t.objective);
  return (
    <>
      <TrialHeader o={o} runId={runId} trialId={trialId} t={t} run={run.data} />
      <TrialCards o={o} t={t} />
    </>
  );
}

/** Where the trial sits in its run, what it scored and how it was trained. */
function TrialHeader({ o, runId, trialId, t, run }: { o: Objective; runId: string; trialId: string; t: TrialDetail; run: RunDetail | null }) {
  const row = t.row;
  return (
    <header class="run-head">
      <div class="crumbs">
        <a href="/runs">runs</a> / <a href={runPath(runId)}>{runId}</a> / {shortId(trialId)}
      </div>
      <h1 data-testid="trial-hypothesis">{row.hypothesis}</h1>
      <dl class="facts">
        <Fact term="outcome">
          <Outcome verdict={row.verdict} failure={row.failure_label} status={row.status} />
          {row.decision && <span class="muted"> · {row.decision.replace(/_/g, " ")}</span>}
        </Fact>
        <Fact term="val (95% CI)">{ci(o, row.val)}</Fact>
        {t.test && <TestFacts o={o} test={t.test} />}
        <Fact term="surface">{row.surface}</Fact>
        <Fact term="proposer">{row.proposer}</Fact>
        <Fact term="params">{count(row.params)}</Fact>
        <Fact term="fidelity">
          rung {row.fidelity.rung}, {plural(row.fidelity.epochs, "epoch")}, {row.fidelity.subset ? `${count(row.fidelity.subset)} examples` : "all examples"}, {plural(row.fidelity.seeds, "seed")}
        </Fact>
        <Fact term="parents">{row.parent_ids.length ? <TrialLinks run={runId} ids={row.parent_ids} /> : "–"}</Fact>
        <Fact term="children">{t.children.length ? <TrialLinks run={runId} ids={t.children} /> : "–"}</Fact>
      </dl>
      {t.judged_reason && <p class="reason">{t.judged_reason}</p>}
      <ComparePicker o={o} runId={runId} trialId={trialId} run={run} />
    </header>
  );
}

/** The held-out test's facts: per seed, the ensemble, and what inference costs. */
function TestFacts({ o, test }: { o: Objective; test: NonNullable<TrialDetail["test"]> }) {
  const inference = test.inference;
  return (
    <>
      <div data-testid="test-per-seed">
        <dt>held-out test, per seed (95% CI)</dt>
        <dd title={test.seeds.map((x) => `seed ${x.seed}: ${metric(o, x[o.metric])}`).join(", ")}>{ci(o, test.per_seed)}</dd>
      </div>
      {test.ensemble && (
        <div data-testid="test-ensemble">
          <dt>held-out test, ensemble of its {plural(test.per_seed?.n ?? test.seeds.length, "seed")}</dt>
          <dd>{ci(o, test.ensemble)}</dd>
        </div>
      )}
      {inference?.batch_1 && inference.batch_eval && (
        <div data-testid="test-inference">
          <dt>inference on the {inference.device || "device"} it trained on (median of its seeds)</dt>
          <dd title={`90th percentiles: ${inference.batch_1.p90_ms.toPrecision(2)} ms and ${inference.batch_eval.p90_ms.toPrecision(3)} ms`}>
            {inference.batch_1.median_ms.toPrecision(2)} ms for one example · {inference.batch_eval.median_ms.toPrecision(3)} ms for a batch of {inference.batch_eval.batch} ·{" "}
            {(inference.flops_per_sample / 1e6).toPrecision(3)} MFLOPs an example
            {inference.batch_eval.peak_memory_mb !== null && ` · at most ${inference.batch_eval.peak_memory_mb.toPrecision(3)} MiB of GPU memory for the batch`}
            {inference.host_cpu_batch_1 && ` · ${inference.host_cpu_batch_1.median_ms.toPrecision(2)} ms for one example on the host's CPU`}
          </dd>
        </div>
      )}
    </>
  );
}

/** The trial's cards: its rationale, curves, classes, analysis, config and code. */
function TrialCards({ o, t }: { o: Objective; t: TrialDetail }) {
  const row = t.row;
  return (
    <div class="cards">
      <Section title="Rationale" wide>
        <p>{t.rationale || <span class="muted">–</span>}</p>
        {t.adopted_concepts.length > 0 && <p class="muted">Adopted from the research brief: {t.adopted_concepts.join(", ")}</p>}
        {t.informed_by.length > 0 && <p class="muted" data-testid="warm-start">Warm start: the config of past trial {t.informed_by.join(", ")}, evaluated again in this run</p>}
        {t.narrative && <p>{t.narrative}</p>}
      </Section>
      {t.failure && (
        <Section title={`Failure: ${t.failure.label.replace(/_/g, " ")}`} wide testid="failure">
          <p class="error">{t.failure.message}</p>
          {t.failure.traceback && <pre class="code">{t.failure.traceback}</pre>}
        </Section>
      )}
      <Section title={`${title(o)} per epoch`} testid="curves">
        {t.seeds.length ? <SeedCurvesChart o={o} seeds={t.seeds} kind="metric" testid={`curves-${o.metric}`} /> : <p class="muted">No epochs trained.</p>}
      </Section>
      <Section title="Loss per epoch">{t.seeds.length ? <SeedCurvesChart o={o} seeds={t.seeds} kind="loss" testid="curves-loss" /> : <p class="muted">No epochs trained.</p>}</Section>
      {o.task === "classification" && (
        <>
          <Section title="Confusion matrix (summed over seeds)" testid="confusion">
            {t.confusion_matrix.length ? <Confusion detail={t} /> : <p class="muted">No predictions.</p>}
          </Section>
          <Section title="Per class">
            <PerClass detail={t} />
          </Section>
        </>
      )}
      {t.analysis && (
        <Section title="Analysis" wide>
          <p>
            overfitting: {t.analysis.overfitting || "–"} · convergence: {t.analysis.convergence || "–"}
          </p>
          {t.analysis.notes.length > 0 && (
            <ul>
              {t.analysis.notes.map((n) => (
                <li>{n}</li>
              ))}
            </ul>
          )}
        </Section>
      )}
      <Section title="Config">
        <Json value={pretty({ model_config: t.model_config, train_config: t.train_config })} />
      </Section>
      <Section title={row.parent_ids[0] ? `Config diff against ${shortId(row.parent_ids[0])}` : "Config diff"}>
        {row.parent_ids.length ? <Diff text={t.config_diff} testid="config-diff" /> : <p class="muted">No parent: a first trial.</p>}
      </Section>
      {t.summary && (
        <Section title={`Model: ${count(t.summary.total_params)} parameters, ${count(t.summary.flops)} FLOPs, ${t.summary.size_mb.toFixed(2)} MB`} wide>
          <Layers summary={t.summary} />
        </Section>
      )}
      <Section title="Code diff against the parent" wide>
        {t.code_diff ? <Diff text={t.code_diff} testid="code-diff" /> : <p class="muted">No parent code to compare with.</p>}
      </Section>
      <Section title="Generated code" wide>
        <details>
          <summary>{t.code ? `${t.code.split("\n").length} lines of PyTorch` : "no code"}</summary>
          <Json value={t.code} />
        </details>
      </Section>
    </div>
  );
}

function ComparePicker({ o, runId, trialId, run }: { o: Objective; runId: string; trialId: string; run: RunDetail | null }) {
  const others = run?.trials_table.filter((r) => r.trial_id !== trialId) ?? [];
  if (!others.length) return null;
  return (
    <label class="picker">
      compare with…{" "}
      <select data-testid="compare-picker" onChange={(e) => e.currentTarget.value && navigate(comparePath(runId, trialId, e.currentTarget.value))}>
        <option value="">choose a trial</option>
        {others.map((r) => (
          <option value={r.trial_id}>
            {shortId(r.trial_id)} · {r.val ? metric(o, r.val.mean) : (r.failure_label ?? r.status)} · {r.hypothesis.slice(0, 60)}
          </option>
        ))}
      </select>
    </label>
  );
}

function Confusion({ detail }: { detail: TrialDetail }) {
  const m = detail.confusion_matrix;
  const names = m.map((_, i) => detail.class_names[i] ?? String(i));
  const option = useMemo<Option>(() => {
    const max = Math.max(1, ...m.flat());
    return {
      grid: { left: 70, right: 16, top: 8, bottom: 48 },
      tooltip: { formatter: (p: { value: number[] }) => esc(`true ${names[p.value[1]!]}, predicted ${names[p.value[0]!]}: ${p.value[2]}`) },
      xAxis: { type: "category", data: names, name: "predicted", nameLocation: "middle", nameGap: 30, splitArea: { show: true } },
      yAxis: { type: "category", data: names, inverse: true, name: "true", splitArea: { show: true } },
      visualMap: { show: false, min: 0, max, inRange: { color: ["#f4f7fb", "#1f5fa8"] } },
      series: [{ type: "heatmap", data: m.flatMap((row, i) => row.map((v, j) => [j, i, v])), label: { show: names.length <= 12, fontSize: 10 } }],
    };
  }, [detail]);
  return <Chart option={option} height={Math.min(420, 80 + names.length * 26)} testid="confusion-matrix" />;
}

function PerClass({ detail }: { detail: TrialDetail }) {
  if (!detail.per_class.length) return <p class="muted">–</p>;
  const weak = new Set(detail.analysis?.weak_classes ?? []);
  return (
    <table class="grid" data-testid="per-class">
      <thead>
        <tr>
          <th>class</th>
          <th class="num">precision</th>
          <th class="num">recall</th>
          <th class="num">f1</th>
          <th class="num">support</th>
        </tr>
      </thead>
      <tbody>
        {detail.per_class.map((c) => (
          <tr class={weak.has(c.class_index) ? "weak" : ""}>
            <td>{detail.class_names[c.class_index] ?? c.class_index}</td>
            <td class="num">{pct(c.precision, 1)}</td>
            <td class="num">{pct(c.recall, 1)}</td>
            <td class="num">{pct(c.f1, 1)}</td>
            <td class="num">{c.support}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Layers({ summary }: { summary: NonNullable<TrialDetail["summary"]> }) {
  return (
    <div class="scroll short">
      <table class="grid">
        <thead>
          <tr>
            <th>layer</th>
            <th>type</th>
            <th>output shape</th>
            <th class="num">params</th>
          </tr>
        </thead>
        <tbody>
          {summary.layers.map((l) => (
            <tr>
              <td>{l.name}</td>
              <td>{l.type}</td>
              <td>[{l.output_shape.join(", ")}]</td>
              <td class="num">{count(l.params)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
