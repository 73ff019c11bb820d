import { ResearchError, type FailureName, type ReasonName, type ResearchErrorOptions } from "../failure.js";

/**
 * An LLM failure as the project's one error. Callers branch on `reason`
 * (fall back to the built-in brain, step down the JSON mode, give up); the
 * label follows from it, so `retryable` holds exactly for an endpoint that
 * may answer later: a timeout, a dropped connection, throttling, HTTP 5xx or 408.
 */
export function llmError(reason: ReasonName, message: string, details: Omit<ResearchErrorOptions, "reason"> = {}): ResearchError {
  return new ResearchError(labelOf(reason, details.status), message, "", { ...details, reason });
}

function labelOf(reason: ReasonName, status: number | undefined): FailureName {
  switch (reason) {
    case "timeout":
    case "network":
    case "rate_limited":
      return "runner_unavailable";
    case "http":
      // Without a status the server answered 200 with something that is not a completion.
      if (status === undefined) return "crash";
      // Any other 4xx is a key, model or parameter the server will refuse every time.
      return status >= 500 || status === 408 ? "runner_unavailable" : "invalid_config";
    default:
      return "crash";
  }
}
