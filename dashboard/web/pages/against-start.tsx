/** The run page's "Against the starting point": the report's section (lineage-store/baseline.ts), as a page shows it. */
import type { AgainstStart, PairedGain, RunDetail } from "../../api";
import { Diff } from "../diff";
import { gain, metric, type Objective } from "../format";
import { TrialLinks } from "../ui";

export function AgainstStartView({ o, run, c }: { o: Objective; run: RunDetail; c: AgainstStart }) {
  const link = (id: string) => <TrialLinks run={run.run_id} ids={[id]} />;
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
          <GainRow o={o} name="validation" g={c.val} />
          <GainRow o={o} name="test" g={c.test} />
        </tbody>
      </table>
      <Changes c={c} />
      {c.path ? (
        <Path o={o} runId={run.run_id} path={c.path} />
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

/** The best against trial 0 on one split, seed by seed. */
function GainRow({ o, name, g }: { o: Objective; name: string; g: PairedGain | null }) {
  return (
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
}

/** What the best changed in trial 0's recipe and constructor arguments. */
function Changes({ c }: { c: AgainstStart }) {
  const changes = [
    ...c.recipe_changes.map((r) => ({ what: r.field, from: r.from, to: r.to })),
    ...c.argument_changes.map((r) => ({ what: `${r.name} (constructor)`, from: r.from, to: r.to })),
  ];
  if (!changes.length) return <p class="muted">The recipe and the model's arguments are trial 0's.</p>;
  return (
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
  );
}

/** The trials from trial 0 to the best, each move with its change in the score. */
function Path({ o, runId, path }: { o: Objective; runId: string; path: NonNullable<AgainstStart["path"]> }) {
  return (
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
        {path.map((p) => (
          <tr>
            <td>
              <TrialLinks run={runId} ids={[p.trial_id]} />
            </td>
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
  );
}
