/** `/search?q=…`: trials like a description, across runs (the lineage store's similarity query). */
import { useState } from "preact/hooks";
import type { SearchHit } from "../../api";
import { useJson } from "../data";
import { metric, objectiveOf, shortId } from "../format";
import { navigate, runPath, trialPath } from "../router";
import { Loading } from "../ui";

export function SearchPage({ q }: { q: string }) {
  const [text, setText] = useState(q);
  const hits = useJson<SearchHit[]>(q ? `/api/search?q=${encodeURIComponent(q)}` : null);
  return (
    <>
      <h1>Search trials</h1>
      <form
        class="controls"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(`/search?q=${encodeURIComponent(text.trim())}`);
        }}
      >
        <input class="grow" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="e.g. wider residual blocks with mixup" data-testid="search-input" />
        <button type="submit">Search</button>
      </form>
      {q && (hits.data ? <Hits hits={hits.data} /> : <Loading error={hits.error} />)}
    </>
  );
}

function Hits({ hits }: { hits: SearchHit[] }) {
  if (!hits.length) return <p class="muted">Nothing similar.</p>;
  return (
    <table class="grid" data-testid="search-results">
      <thead>
        <tr>
          <th class="num">distance</th>
          <th>trial</th>
          <th>hypothesis</th>
          <th class="num">val</th>
          <th>failure</th>
        </tr>
      </thead>
      <tbody>
        {hits.map((h) => (
          <Hit key={h.trial_id} hit={h} />
        ))}
      </tbody>
    </table>
  );
}

/** Hits come from every run: each value is in its own run's metric. */
function Hit({ hit: h }: { hit: SearchHit }) {
  const o = objectiveOf(h.objective);
  return (
    <tr>
      <td class="num">{h.distance.toFixed(3)}</td>
      <td class="nowrap">
        <a href={runPath(h.run_id)}>{h.run_id}</a> / <a href={trialPath(h.run_id, h.trial_id)}>{shortId(h.trial_id)}</a>
      </td>
      <td>{h.hypothesis}</td>
      <td class="num">{metric(o, h[o.key])}</td>
      <td>{h.failure_label?.replace(/_/g, " ")}</td>
    </tr>
  );
}
