/** The form of a dashboard served by `research-agent serve`: a goal in, checked as launch checks it, queued. */
import { useState } from "preact/hooks";
import type { QueueJson, StartRunReply, StartRunRequest } from "../api";
import { duration, when } from "./format";
import { runPath } from "./router";

async function startRun(body: StartRunRequest): Promise<StartRunReply> {
  try {
    const res = await fetch("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return (await res.json()) as StartRunReply;
  } catch (e) {
    return { ok: false, error: String((e as Error).message ?? e) };
  }
}

/** Only the fields a person filled in: the rest keep launch's defaults. */
function requestOf(fields: Record<string, string>): StartRunRequest {
  const filled = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.trim()]).filter(([, v]) => v !== ""));
  return filled as StartRunRequest;
}

const FIELDS: { name: keyof StartRunRequest; label: string; placeholder: string }[] = [
  { name: "time_budget", label: "time budget", placeholder: "30m" },
  { name: "max_params", label: "max parameters", placeholder: "from the goal" },
  { name: "seeds_per_trial", label: "seeds per trial", placeholder: "3" },
  { name: "from", label: "start from (this machine's path)", placeholder: "model.py, config.yaml or RUN/TRIAL" },
  { name: "class", label: "class (a model in Python)", placeholder: "Net" },
  { name: "recipe", label: "recipe (train_config file)", placeholder: "recipe.yaml" },
  { name: "space", label: "search space (YAML or JSON, as launch --space)", placeholder: "{optimizer: {values: [adam, adamw]}, families: [vgg-cnn]}" },
];

export function NewRun({ queue, onChange }: { queue: QueueJson; onChange: () => void }) {
  const [goal, setGoal] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [reply, setReply] = useState<StartRunReply | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setReply(await startRun({ ...requestOf(fields), goal: goal.trim() }));
    setBusy(false);
    onChange();
  };
  return (
    <section class="new-run" data-testid="new-run">
      <h2>New run</h2>
      <form onSubmit={submit}>
        <label>
          goal
          <input
            name="goal"
            required
            value={goal}
            onInput={(e) => setGoal((e.target as HTMLInputElement).value)}
            placeholder='fashion-mnist: 92% validation accuracy, < 200k params, 20 min'
            data-testid="new-run-goal"
          />
        </label>
        <details>
          <summary>more settings</summary>
          {FIELDS.map((f) => (
            <label key={f.name}>
              {f.label}
              <input name={f.name} value={fields[f.name] ?? ""} placeholder={f.placeholder} onInput={(e) => setFields({ ...fields, [f.name]: (e.target as HTMLInputElement).value })} data-testid={`new-run-${f.name}`} />
            </label>
          ))}
        </details>
        <button type="submit" disabled={busy || !goal.trim()} data-testid="new-run-submit">
          {busy ? "Checking…" : "Start"}
        </button>
      </form>
      {reply &&
        (reply.ok ? (
          <p class="ok" data-testid="new-run-reply">
            <a href={runPath(reply.run_id)}>{reply.run_id}</a> {reply.position === 0 ? "started" : `queued: ${reply.position} to start before it, itself included`}
          </p>
        ) : (
          <p class="error" data-testid="new-run-reply">
            {reply.error}
          </p>
        ))}
      {queue.queued.length > 0 && (
        <table class="grid" data-testid="queue-table">
          <thead>
            <tr>
              <th>queued run</th>
              <th>goal</th>
              <th>by</th>
              <th>submitted</th>
            </tr>
          </thead>
          <tbody>
            {queue.queued.map((r) => (
              <tr key={r.run_id} data-testid="queued-row">
                <td class="nowrap">{r.run_id}</td>
                <td class="goal">{r.goal}</td>
                <td>{r.who}</td>
                <td>
                  {when(r.submitted_at)} <span class="muted">({duration((Date.now() - r.submitted_at) / 1000)} ago)</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="muted">
        {queue.max_runs} run{queue.max_runs === 1 ? "" : "s"} at a time; {queue.running.length} going, {queue.queued.length} waiting.
      </p>
    </section>
  );
}
