/** Small pieces every page uses. */
import type { ComponentChildren } from "preact";
import type { RunStatusText } from "../api";
import { outcomeColor, shortId } from "./format";
import { trialPath } from "./router";

export function StatusBadge({ status, live }: { status: RunStatusText | string; live?: boolean }) {
  return (
    <span class={`badge st-${status}`} data-testid="status-badge">
      {live && <span class="live-dot" title="live: events arrive as they happen" />}
      {status.replace(/_/g, " ")}
    </span>
  );
}

/** A trial's outcome: its verdict, or what failed it, or where it is. */
export function Outcome({ verdict, failure, status }: { verdict: string | null; failure: string | null; status: string }) {
  const text = failure ?? verdict ?? status;
  return (
    <span class="outcome" style={{ color: outcomeColor(verdict, failure, status) }}>
      {text.replace(/_/g, " ")}
    </span>
  );
}

export function Section({ title, children, wide, testid }: { title: string; children: ComponentChildren; wide?: boolean; testid?: string }) {
  return (
    <section class={wide ? "card wide" : "card"} data-testid={testid}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function Loading({ error }: { error: string | null }) {
  return error ? <p class="error">{error}</p> : <p class="muted">Loading…</p>;
}

export function Json({ value }: { value: string }) {
  return value ? <pre class="code">{value}</pre> : <p class="muted">–</p>;
}

/** One fact of a page's header: its term, and its value (the test id names the value). */
export function Fact({ term, testid, children }: { term: ComponentChildren; testid?: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd data-testid={testid}>{children}</dd>
    </div>
  );
}

/** Trials of a run as links, by their short ids, comma-separated. */
export function TrialLinks({ run, ids }: { run: string; ids: readonly string[] }) {
  return (
    <>
      {ids.map((id, i) => (
        <>
          {i > 0 && ", "}
          <a href={trialPath(run, id)}>{shortId(id)}</a>
        </>
      ))}
    </>
  );
}
