/** pause, resume, stop, cancel and propose: one intervention on a live run (swarm/interventions.ts). */
import { existsSync, readFileSync } from "node:fs";
import { userInfo } from "node:os";
import type { InterventionKindName } from "../../core/enums.js";
import { parseModelConfig, parseTrainConfig } from "../../core/model-config.js";
import { interventionEvent, type InterventionCheck } from "../../swarm/interventions.js";
import { applyToRunState, emptyRunState } from "../../swarm/run-state.js";
import { args, EXIT, fail } from "../args.js";
import { connectOrFail } from "../workspace.js";

/**
 * A config flag's value, a file's text or the JSON itself, checked with `parse` before
 * the bus is asked: a problem in a file names the file (YAML errors give its line).
 */
function configFlag(flag: string, v: string | undefined, parse: (text: string) => { ok: boolean; error?: string }): string | undefined {
  if (v === undefined) return undefined;
  const inline = v.trim().startsWith("{");
  if (!inline && !existsSync(v)) fail(`--${flag}: no file ${v} (give a file, or the JSON itself)`);
  const text = inline ? v : readFileSync(v, "utf8");
  const checked = parse(text);
  if (!checked.ok) fail(`--${flag}${inline ? "" : ` ${v}`}: ${checked.error}`);
  return text;
}

export function intervention(kind: InterventionKindName) {
  return async (argv: string[]): Promise<void> => {
    const { values: a, positionals } = args(argv, {
      reason: { type: "string" },
      hypothesis: { type: "string" },
      model: { type: "string" },
      recipe: { type: "string" },
      parent: { type: "string", multiple: true },
    }, { positionals: kind === "cancel_trial" ? ["RUN", "TRIAL"] : ["RUN"] });
    const runId = positionals[0] ?? fail(`${kind} needs a RUN id (research-agent runs lists them)`);
    if (kind === "cancel_trial" && !positionals[1]) fail("cancel needs a RUN and a TRIAL id");
    const request = { kind, reason: a.reason, trial_id: positionals[1], hypothesis: a.hypothesis, model_config: configFlag("model", a.model, parseModelConfig), train_config: configFlag("recipe", a.recipe, parseTrainConfig), parent_ids: a.parent };
    const bus = (await connectOrFail(a.workspace, a.nats)) ??
      fail(
        kind === "resume"
          ? `no swarm is running for this workspace: resume goes on with a paused run; an interrupted one goes on with research-agent launch --resume ${runId}`
          : "no swarm is running for this workspace: only a live run can be paused, resumed, stopped, cancelled or given a proposal",
        EXIT.cannotRun,
      );
    let check: InterventionCheck;
    try {
      const state = emptyRunState(runId);
      const watch = await bus.watch(runId, (e) => void applyToRunState(state, e));
      await watch.caughtUp;
      await watch.stop();
      check = interventionEvent(state, request, `cli:${userInfo().username}`);
      if (check.ok) await bus.publish(check.event);
    } finally {
      await bus.close();
    }
    if (!check.ok) fail(check.error);
    process.stdout.write(a.json ? `${JSON.stringify({ run_id: runId, kind, summary: check.summary })}\n` : `${check.summary}\n`);
  };
}
