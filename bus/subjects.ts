import { isId } from "../core/ids.js";
import { EventSchema, type Event } from "../proto/gen/research/v1/events_pb.js";
import { ResearchError } from "../core/failure.js";

/** The JetStream stream that holds the replayable trajectory of every run. */
export const STREAM = "RESEARCH";
export const STREAM_SUBJECTS = "research.>";

/** Every case of the Event body oneof, as protobuf-es names it ("trialProposed"). */
export type BodyCase = NonNullable<Event["body"]["case"]>;
/**
 * Kinds that live on core NATS only. Heartbeats are liveness noise; per-epoch
 * progress is a live view of an evaluation whose curves arrive in full with
 * trial_evaluated. Neither is worth replaying, and progress alone used to be
 * more than half of a run's stored events.
 */
export type LiveKind = "heartbeat" | "trialProgress";
/** The kinds that go through the durable stream: the replayable trajectory. */
export type EventKind = Exclude<BodyCase, LiveKind>;
const LIVE_KINDS: ReadonlySet<BodyCase> = new Set<LiveKind>(["heartbeat", "trialProgress"]);

const bodyFields = EventSchema.oneofs.find((o) => o.name === "body")!.fields;

/** Two subject tokens per kind, from the proto field name: trial_proposed -> trial.proposed. */
const kindTokens = new Map<BodyCase, string>(
  bodyFields.map((f) => {
    const [head, ...rest] = f.name.split("_");
    return [f.localName as BodyCase, `${head}.${rest.join("-")}`];
  }),
);

export const EVENT_KINDS: readonly EventKind[] = bodyFields
  .map((f) => f.localName as BodyCase)
  .filter((c): c is EventKind => !LIVE_KINDS.has(c));

export function isLive(kind: BodyCase): kind is LiveKind {
  return LIVE_KINDS.has(kind);
}

/**
 * The subject an event is published on: research.<kind>.<run_id> for the
 * stream, or the live subjects of heartbeats and progress.
 */
export function subjectFor(event: Pick<Event, "runId" | "body">): string {
  const body = event.body;
  if (body.case === undefined) throw new Error("event has no body");
  if (body.case === "heartbeat") return heartbeatSubject(body.value.role, body.value.instance);
  if (body.case === "trialProgress") return progressSubject(event.runId);
  return `research.${kindTokens.get(body.case)}.${token("run_id", event.runId)}`;
}

/** Live per-epoch progress of one run's evaluations ("*": every run's): swarm.progress.<run_id>. */
export function progressSubject(runId = "*"): string {
  return `swarm.progress.${runId === "*" ? "*" : token("run_id", runId)}`;
}

/** Filter for one kind in one run, or in every run ("*"). */
export function filterFor(kind: EventKind, runId = "*"): string {
  return `research.${kindTokens.get(kind)}.${runId === "*" ? "*" : token("run_id", runId)}`;
}

/** Every event of one run ("*": of every run). Relies on each kind being exactly two tokens. */
export function runFilter(runId = "*"): string {
  return runId === "*" ? STREAM_SUBJECTS : `research.*.*.${token("run_id", runId)}`;
}

/** Heartbeats live on core NATS only: swarm.heartbeat.<role>.<instance>. */
export function heartbeatSubject(role = "*", instance = "*"): string {
  const r = role === "*" ? "*" : token("role", role);
  const i = instance === "*" ? "*" : token("instance", instance);
  return `swarm.heartbeat.${r}.${i}`;
}

/** Durable consumer of one role for one kind: "coder-trial-proposed". */
export function consumerName(role: string, kind: EventKind): string {
  return `${token("role", role)}-${kindTokens.get(kind)!.replace(".", "-")}`;
}

/** Ids become subject tokens and consumer names, so they may not contain separators or wildcards. */
function token(what: string, value: string): string {
  if (!isId(value)) {
    throw new ResearchError("invalid_config", `${what} "${value}" is not usable in a NATS subject (use letters, digits, "_" or "-")`);
  }
  return value;
}
