/**
 * The one error of the LLM layer, with a closed code set so callers branch on
 * `code` (fall back to the built-in brain, label the trial, give up) instead
 * of parsing messages or knowing the SDK's error classes.
 */
export const LLM_ERROR_CODES = ["timeout", "rate_limited", "http", "refusal", "invalid_output", "network"] as const;
export type LlmErrorCode = (typeof LLM_ERROR_CODES)[number];

export class LlmError extends Error {
  override name = "LlmError";
  readonly code: LlmErrorCode;
  /** The model's last answer as text, when there was one (invalid_output, refusal). */
  readonly raw: string | undefined;
  /** HTTP requests made before giving up. */
  readonly attempts: number;
  /** HTTP status of the last failed request, when there was a response. */
  readonly status: number | undefined;

  constructor(
    code: LlmErrorCode,
    message: string,
    details: { raw?: string; attempts?: number; status?: number; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.raw = details.raw;
    this.attempts = details.attempts ?? 1;
    this.status = details.status;
  }

  /** Errors worth another request after a pause: the server or the path to it may recover. */
  get transient(): boolean {
    return this.code === "timeout" || this.code === "rate_limited" || this.code === "network" || (this.code === "http" && this.status !== undefined && (this.status >= 500 || this.status === 408));
  }
}
