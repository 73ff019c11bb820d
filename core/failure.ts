import { FailureLabel, FailureLabelSchema, FailureSchema, type ErrorReason, type Failure } from "../proto/gen/research/v1/common_pb.js";
import { closedSet, type EnumName } from "./enums.js";
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

/** Why a call to an outside service failed, where the label alone is too coarse (ErrorReason in common.proto). */
export type ReasonName = EnumName<typeof ErrorReason>;

export interface ResearchErrorOptions {
  cause?: unknown;
  reason?: ReasonName;
  /** The service's answer when it could not be used (the model's text), so logs and fallbacks can show it. */
  raw?: string;
  /** HTTP status of the last failed request, when there was a response. */
  status?: number;
  /** Requests made before giving up. */
  attempts?: number;
  /** How long the service asked us to wait before the next request. */
  retryAfterMs?: number;
}

/**
 * The one error class of the project: every boundary (gRPC, the bus, the
 * LLM client, arXiv, the compiler) turns what went wrong into a
 * ResearchError with a failure label, so callers branch on a closed set
 * instead of on classes or messages. The label is the code; `reason`
 * narrows it for calls to outside services.
 */
export class ResearchError extends Error {
  override name = "ResearchError";
  readonly reason: ReasonName | undefined;
  readonly raw: string | undefined;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  /** Set again by a client that retried before giving up. */
  attempts: number;

  constructor(
    readonly label: FailureName,
    message: string,
    readonly detail = "",
    options: ResearchErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason;
    this.raw = options.raw;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.attempts = options.attempts ?? 1;
  }

  /**
   * Worth another try after a pause (the bus redelivers, the LLM and arXiv
   * clients resend). Only an unreachable service is: any other failure would
   * fail the same way again.
   */
  get retryable(): boolean {
    return this.label === "runner_unavailable";
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
