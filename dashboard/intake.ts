/**
 * New runs over the dashboard's API (POST /api/runs), for a swarm started with
 * `research-agent serve`: the request as the client writes it, validated once
 * here, and what the serve verb gives the server to take it. A dashboard
 * started by `ui` has no intake and refuses new runs.
 */
import type { RunDocument, RunDocumentFields } from "../core/run-document.js";

/** launch's flags that shape a run, snake_case (core/run-document.ts); paths are the serving machine's. */
export type StartRunRequest = RunDocument;
export type StartRunFields = RunDocumentFields;

/** Accepted: started now (position 0) or queued behind others; refused: launch's own one line. */
export type StartRunReply =
  | {
      ok: true;
      run_id: string;
      /** 0: started now; N: the runs that start before it, itself included. */
      position: number;
    }
  | { ok: false; error: string };

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
