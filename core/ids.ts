/**
 * Run, trial and instance ids end up as NATS subject tokens
 * (research.<kind>.<run>, swarm.heartbeat.<role>.<instance>), in consumer
 * names and as directory names (runs/<run>/experiments/<trial>/). Letters,
 * digits, "_" and "-" are safe in every one of them: no subject separator or
 * wildcard (".", "*", ">"), no path separator, and never "." or "..".
 */
const ID = /^[A-Za-z0-9_-]+$/;

export function isId(value: string): boolean {
  return ID.test(value);
}

/** An id made from free text (a host name): every other character becomes "-". */
export function toId(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, "-") || "-";
}

const TRIAL_SUFFIX = /-t(\d+)$/;

/** The run's trial number `index`: "<run>-t007". */
export function trialId(runId: string, index: number): string {
  return `${runId}-t${String(index).padStart(3, "0")}`;
}

/** The run a trial id belongs to: "<run>" of "<run>-t007". */
export function runOfTrial(id: string): string {
  return id.replace(TRIAL_SUFFIX, "");
}

/** "t007": what tells a run's trials apart, for lines that already name the run; other ids whole. */
export function shortTrialId(id: string): string {
  const m = TRIAL_SUFFIX.exec(id);
  return m ? `t${m[1]}` : id;
}
