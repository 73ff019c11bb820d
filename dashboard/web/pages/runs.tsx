/** `/` and `/runs`: every run in the workspace, live ones updating. */
import type { QueueJson, RunSummary } from "../../api";
import { NewRun } from "../new-run";
import { useJson, useLive } from "../data";
import { ci, duration, metric, objectiveOf, when } from "../format";
import { runPath } from "../router";
import { Loading, StatusBadge } from "../ui";

export function RunsPage() {
  const runs = useJson<RunSummary[]>("/api/runs");
  const queue = useJson<QueueJson>("/api/queue");
  useLive(undefined, (m) => {
    if (m.type !== "change") return;
    runs.reload();
    queue.reload();
  });
  if (!runs.data) return <Loading error={runs.error} />;
  return (
    <>
      <h1>Runs</h1>
      {queue.data?.accepting && (
        <NewRun
          queue={queue.data}
          onChange={() => {
            queue.reload();
            runs.reload();
          }}
        />
      )}
      {runs.data.length === 0 ? (
        <p class="muted">No runs in this workspace yet: start one with <code>./research-agent launch "…"</code>.</p>
      ) : (
        <table class="grid" data-testid="runs-table">
          <thead>
            <tr>
              <th>run</th>
              <th>goal</th>
              <th>status</th>
              <th class="num">best (95% CI)</th>
              <th class="num">test</th>
              <th class="num">trials</th>
              <th class="num">in flight</th>
              <th>started</th>
              <th class="num">time</th>
            </tr>
          </thead>
          <tbody>
            {[...runs.data].sort((a, b) => b.started_at - a.started_at).map((r) => (
              <RunRow key={r.run_id} run={r} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function RunRow({ run: r }: { run: RunSummary }) {
  const o = objectiveOf(r.objective);
  return (
    <tr data-testid="run-row" data-run={r.run_id} class={r.live ? "is-live" : ""}>
      <td class="nowrap">
        <a href={runPath(r.run_id)}>{r.run_id}</a>
      </td>
      <td class="goal">{r.goal}</td>
      <td>
        <StatusBadge status={r.status} live={r.live} />
      </td>
      <td class="num">{ci(o, r.best?.val)}</td>
      <td class="num">{metric(o, r.best?.[`test_${o.metric}`])}</td>
      <td class="num">
        {r.judged}/{r.trials}
      </td>
      <td class="num">{r.in_flight || ""}</td>
      <td>{when(r.started_at)}</td>
      <td class="num">
        {duration(r.seconds)}
        {r.time_budget_s > 0 && <span class="muted"> / {duration(r.time_budget_s)}</span>}
      </td>
    </tr>
  );
}
