import { FailureLabel, FailureLabelSchema, FailureSchema, type Failure } from "../proto/gen/research/v1/common_pb.js";
import { closedSet } from "./enums.js";
import { create } from "@bufbuild/protobuf";

/** The closed set of failure labels, in their snake_case spelling. */
export const FAILURE_LABEL = closedSet<typeof FailureLabel>(FailureLabelSchema);
export const FAILURE_LABELS = FAILURE_LABEL.names;
export type FailureName = (typeof FAILURE_LABELS)[number];

export function labelName(label: FailureLabel): FailureName | "unspecified" {
  return FAILURE_LABEL.name(label) ?? "unspecified";
}

export function labelFromName(name: string): FailureLabel {
  const value = FAILURE_LABEL.value(name);
  if (value === undefined) throw new Error(`unknown failure label "${name}" (expected one of ${FAILURE_LABELS.join(", ")})`);
  return value;
}

/**
 * The one error class of the project: every boundary turns what went wrong
 * into a ResearchError with a failure label, so callers branch on a closed
 * set instead of parsing messages.
 */
export class ResearchError extends Error {
  override name = "ResearchError";
  constructor(
    readonly label: FailureName,
    message: string,
    readonly detail = "",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  static from(err: unknown, fallback: FailureName = "crash"): ResearchError {
    if (err instanceof ResearchError) return err;
    if (err instanceof Error) return new ResearchError(fallback, err.message, err.stack ?? "", { cause: err });
    return new ResearchError(fallback, String(err));
  }

  static fromProto(f: Failure): ResearchError {
    const name = labelName(f.label);
    return new ResearchError(name === "unspecified" ? "crash" : name, f.message, f.traceback);
  }

  toProto(): Failure {
    return create(FailureSchema, { label: labelFromName(this.label), message: this.message, traceback: this.detail });
  }
}

export function failure(label: FailureName, message: string, traceback = ""): Failure {
  return create(FailureSchema, { label: labelFromName(label), message, traceback });
}
