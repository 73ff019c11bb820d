/**
 * Thrown by a handler when the same event may well succeed later (a runner
 * that is down, a busy GPU): the message is redelivered after a growing delay.
 * Any other error means the event cannot be handled and goes to the dead letter
 * hook at once.
 */
export class TransientError extends Error {
  override name = "TransientError";
}
