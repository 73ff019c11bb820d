/**
 * New runs over the dashboard's API (POST /api/runs), for a swarm started with
 * `research-agent serve`: the request as the client writes it, validated once
 * here, and what the serve verb gives the server to take it. A dashboard
 * started by `ui` has no intake and refuses new runs.
 */
import { z } from "zod";

const count = z.union([z.number().int().positive(), z.string().max(20)]).transform(String);

/** launch's flags that shape a run, snake_case; paths are the serving machine's. */
export const StartRunRequestSchema = z.strictObject({
  goal: z.string().min(1).max(2000),
  time_budget: z.string().max(20).optional(),
  target: z.union([z.number(), z.string().max(20)]).transform(String).optional(),
  max_params: count.optional(),
  max_trials: count.optional(),
  seeds: count.optional(),
  parallel: count.optional(),
  subset: count.optional(),
  epochs: count.optional(),
  seed: z.union([z.number().int(), z.string().max(20)]).transform(String).optional(),
  planner: z.string().max(20).optional(),
  data_dir: z.string().max(4000).optional(),
  from: z.string().max(4000).optional(),
  class: z.string().max(200).optional(),
  recipe: z.string().max(4000).optional(),
  no_research: z.boolean().optional(),
  // The space document itself (launch --space's), as an object or as YAML or JSON text (the form's), never a path: serve reads no file for it.
  space: z.union([z.record(z.string(), z.unknown()), z.string().max(20000)]).optional(),
});
export type StartRunRequest = z.input<typeof StartRunRequestSchema>;
export type StartRunFields = z.output<typeof StartRunRequestSchema>;

/** Accepted: started now (position 0) or queued behind others; refused: launch's own one line. */
export type StartRunReply = { ok: true; run_id: string; position: number } | { ok: false; error: string };

export interface QueuedRun {
  run_id: string;
  goal: string;
  /** Who asked (the X-Research-User header, else the server's user). */
  who: string;
  submitted_at: number;
}

/** GET /api/queue: whether this dashboard takes new runs, and the runs it took that are going or waiting. */
export interface QueueJson {
  accepting: boolean;
  /** Runs side by side at most. */
  max_runs: number;
  running: QueuedRun[];
  queued: QueuedRun[];
}

export interface RunIntake {
  /** Checks the request as launch checks its flags and the runner the dataset; answers with an HTTP status. */
  submit(fields: StartRunFields, who: string): Promise<[number, StartRunReply]>;
  queue(): QueueJson;
}

export const NO_INTAKE: QueueJson = { accepting: false, max_runs: 0, running: [], queued: [] };
