/** What a person can do to a live run: pause, resume, stop, cancel a trial, propose one. */
import { useState } from "preact/hooks";
import type { InterventionReply, RunDetail, TrialDetail } from "../api";
import { getJson } from "./data";
import { pretty, shortId } from "./format";

export type InterventionBody = {
  kind: "pause" | "resume" | "stop" | "cancel_trial" | "propose";
  reason?: string;
  trial_id?: string;
  hypothesis?: string;
  model_config?: unknown;
  train_config?: unknown;
  parent_ids?: string[];
};

export async function intervene(run: string, body: InterventionBody): Promise<InterventionReply> {
  try {
    const res = await fetch(`/api/runs/${encodeURIComponent(run)}/interventions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return (await res.json()) as InterventionReply;
  } catch (e) {
    return { ok: false, error: String((e as Error).message ?? e) };
  }
}

/** The reply's one line: the summary, or why not. */
export function ReplyLine({ reply }: { reply: InterventionReply | null }) {
  if (!reply) return null;
  return reply.ok ? (
    <p class="ok" data-testid="intervention-reply">
      {reply.summary}
    </p>
  ) : (
    <p class="error" data-testid="intervention-reply">
      {reply.error}
    </p>
  );
}

/** Whether people can still act on the run: only a swarm that follows it takes interventions. */
export const canIntervene = (run: RunDetail) => run.live && ["running", "paused"].includes(run.status);

export function RunControls({ run, onReply }: { run: RunDetail; onReply: (r: InterventionReply) => void }) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const act = async (kind: "pause" | "resume" | "stop") => {
    if (kind === "stop" && !confirm(`Stop run ${run.run_id}? Trials in flight are cancelled, then the best is confirmed on the test split.`)) return;
    setBusy(true);
    onReply(await intervene(run.run_id, { kind, ...(reason.trim() ? { reason: reason.trim() } : {}) }));
    setBusy(false);
  };
  return (
    <div class="controls" data-testid="run-controls">
      {run.paused ? (
        <button onClick={() => act("resume")} disabled={busy} data-testid="btn-resume">
          Resume
        </button>
      ) : (
        <button onClick={() => act("pause")} disabled={busy} data-testid="btn-pause">
          Pause
        </button>
      )}
      <button class="danger" onClick={() => act("stop")} disabled={busy} data-testid="btn-stop">
        Stop
      </button>
      <input placeholder="reason (optional)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
    </div>
  );
}

export function CancelButton({ run, trialId, onReply }: { run: string; trialId: string; onReply: (r: InterventionReply) => void }) {
  const [busy, setBusy] = useState(false);
  return (
    <button
      class="small danger"
      disabled={busy}
      data-testid="btn-cancel-trial"
      onClick={async (e) => {
        e.stopPropagation();
        setBusy(true);
        onReply(await intervene(run, { kind: "cancel_trial", trial_id: trialId }));
        setBusy(false);
      }}
    >
      Cancel
    </button>
  );
}

function parseJsonField(name: string, text: string, required: boolean): { value?: unknown; error?: string } {
  if (!text.trim()) return required ? { error: `${name} is required` } : {};
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (e) {
    return { error: `${name}: ${(e as Error).message}` };
  }
}

/** A trial of one's own: it joins the planner's queue and runs next. */
export function ProposeForm({ run, onReply }: { run: RunDetail; onReply: (r: InterventionReply) => void }) {
  const [hypothesis, setHypothesis] = useState("");
  const [model, setModel] = useState("");
  const [train, setTrain] = useState("");
  const [parents, setParents] = useState("");
  const [error, setError] = useState<string | null>(null);
  const best = run.best?.trial_id;

  const startFromBest = async () => {
    if (!best) return;
    try {
      const t = await getJson<TrialDetail>(`/api/runs/${encodeURIComponent(run.run_id)}/trials/${encodeURIComponent(best)}`);
      setModel(pretty(t.model_config));
      setTrain(pretty(t.train_config));
      setParents(best);
      setError(null);
    } catch (e) {
      setError(String((e as Error).message));
    }
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    const m = parseJsonField("model_config", model, true);
    const t = parseJsonField("train_config", train, false);
    const problem = m.error ?? t.error ?? (hypothesis.trim() ? null : "hypothesis is required");
    setError(problem);
    if (problem) return;
    const parentIds = parents.split(/[\s,]+/).filter(Boolean);
    const reply = await intervene(run.run_id, {
      kind: "propose",
      hypothesis: hypothesis.trim(),
      model_config: m.value,
      ...(t.value === undefined ? {} : { train_config: t.value }),
      ...(parentIds.length ? { parent_ids: parentIds } : {}),
    });
    onReply(reply);
    if (reply.ok) setHypothesis("");
  };

  return (
    <form class="propose" onSubmit={submit} data-testid="propose-form">
      <label>
        hypothesis
        <input value={hypothesis} onInput={(e) => setHypothesis(e.currentTarget.value)} placeholder="what this trial tests, and why it should help" />
      </label>
      <div class="two">
        <label>
          model_config (JSON)
          <textarea rows={8} value={model} onInput={(e) => setModel(e.currentTarget.value)} spellcheck={false} />
        </label>
        <label>
          train_config (JSON, optional)
          <textarea rows={8} value={train} onInput={(e) => setTrain(e.currentTarget.value)} spellcheck={false} />
        </label>
      </div>
      <label>
        parents (optional, ids separated by commas)
        <input value={parents} onInput={(e) => setParents(e.currentTarget.value)} placeholder={best ? shortId(best) : "t001"} />
      </label>
      <div class="controls">
        <button type="submit" data-testid="btn-propose">
          Propose
        </button>
        {best && (
          <button type="button" onClick={startFromBest}>
            Start from the best ({shortId(best)})
          </button>
        )}
        {error && <span class="error">{error}</span>}
      </div>
    </form>
  );
}
