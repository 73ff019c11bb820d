/** `/runs/:run/compare/:a/:b`: two trials side by side. */
import type { TrialDetail } from "../../api";
import { OverlayChart } from "../curves";
import { useJson } from "../data";
import { Diff, lineDiff } from "../diff";
import { ci, count, objectiveOf, plural, pretty, shortId } from "../format";
import { runPath, trialPath } from "../router";
import { Loading, Outcome, Section } from "../ui";

const trialUrl = (run: string, id: string) => `/api/runs/${encodeURIComponent(run)}/trials/${encodeURIComponent(id)}`;
const configText = (t: TrialDetail) => pretty({ model_config: t.model_config, train_config: t.train_config });

export function ComparePage({ runId, a, b }: { runId: string; a: string; b: string }) {
  const ta = useJson<TrialDetail>(trialUrl(runId, a));
  const tb = useJson<TrialDetail>(trialUrl(runId, b));
  if (!ta.data || !tb.data) return <Loading error={ta.error ?? tb.error} />;
  const [x, y] = [ta.data, tb.data];
  const o = objectiveOf(x.objective);
  // The runner measures some metrics in training too (accuracy), others on the validation split alone.
  const trained = [...x.seeds, ...y.seeds].some((s) => s.train_metric.length);
  return (
    <>
      <header class="run-head">
        <div class="crumbs">
          <a href="/runs">runs</a> / <a href={runPath(runId)}>{runId}</a> / compare
        </div>
        <h1>
          {shortId(a)} <span class="muted">vs</span> {shortId(b)}
        </h1>
      </header>
      <div class="cards" data-testid="compare">
        {[x, y].map((t, i) => (
          <Section title={`${i ? "B" : "A"}: ${shortId(t.row.trial_id)}`}>
            <p>
              <a href={trialPath(runId, t.row.trial_id)}>{t.row.hypothesis}</a>
            </p>
            <dl class="facts">
              <div>
                <dt>val (95% CI)</dt>
                <dd>{ci(o, t.row.val)}</dd>
              </div>
              <div>
                <dt>outcome</dt>
                <dd>
                  <Outcome verdict={t.row.verdict} failure={t.row.failure_label} status={t.row.status} />
                </dd>
              </div>
              <div>
                <dt>params</dt>
                <dd>{count(t.row.params)}</dd>
              </div>
              <div>
                <dt>fidelity</dt>
                <dd>
                  r{t.row.fidelity.rung}, {plural(t.row.fidelity.epochs, "epoch")}, {plural(t.row.fidelity.seeds, "seed")}
                </dd>
              </div>
            </dl>
          </Section>
        ))}
        <Section title={`${trained ? "Validation and training" : "Validation"} ${o.label} (seed means)`}>
          <OverlayChart o={o} a={{ name: shortId(a), seeds: x.seeds }} b={{ name: shortId(b), seeds: y.seeds }} kind="metric" testid={`overlay-${o.metric}`} />
        </Section>
        <Section title="Loss (seed means)">
          <OverlayChart o={o} a={{ name: shortId(a), seeds: x.seeds }} b={{ name: shortId(b), seeds: y.seeds }} kind="loss" testid="overlay-loss" />
        </Section>
        <Section title={`Configs: ${shortId(a)} (−) against ${shortId(b)} (+)`} wide>
          <Diff text={lineDiff(configText(x), configText(y))} testid="compare-diff" />
        </Section>
      </div>
    </>
  );
}
