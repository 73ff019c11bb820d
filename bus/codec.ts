import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ResearchError } from "../core/failure.js";
import { EventSchema, type Event } from "../proto/gen/research/v1/events_pb.js";

export function encodeEvent(event: Event): Uint8Array {
  return toBinary(EventSchema, event);
}

/** Throws an invalid_config ResearchError for bytes that are not an Event with a body: such a message can never be handled. */
export function decodeEvent(bytes: Uint8Array): Event {
  let event: Event;
  try {
    event = fromBinary(EventSchema, bytes);
  } catch (err) {
    throw new ResearchError("invalid_config", `not a research.v1.Event (${bytes.length} bytes)`, "", { cause: err });
  }
  // Protobuf decoding is lenient: stray bytes can parse as unknown fields only.
  if (event.body.case === undefined) {
    throw new ResearchError("invalid_config", `research.v1.Event without a body (${bytes.length} bytes)`);
  }
  return event;
}
