import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";

/** Authored JSON text (a config, a brief) read leniently: text that does not parse is `undefined`, never an exception. */
export function parseJson(text: string | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Why text or a value did not give a typed value: the text is not JSON
 * ("parse"), or the value does not fit the schema ("validation", with zod's
 * issues and the value, so a caller can word each issue its own way). `text`
 * is what was read, for logs and for feedback to whoever wrote it.
 */
export type JsonParseError = { kind: "parse"; message: string; text: string } | JsonValidationError;
export type JsonValidationError = { kind: "validation"; message: string; text: string; issues: readonly z.core.$ZodIssue[]; value: unknown };

/** One result shape for every parse-then-validate in the project (after vercel/ai's safeParseJSON). */
export type SafeParseResult<T, E = JsonParseError> = { success: true; value: T; rawValue: unknown } | { success: false; error: E };

/** Fenced or prose-wrapped JSON is common from LLMs without structured outputs, so the object is dug out before parsing. */
export function extractJson(text: string): string {
  const fenced = /```(?:json|JSON)?[ \t]*\r?\n?([\s\S]*?)```/.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  if (body.startsWith("{") || body.startsWith("[")) return body;
  const start = body.indexOf("{");
  const end = body.lastIndexOf("}");
  return start >= 0 && end > start ? body.slice(start, end + 1) : body;
}

/** JSON text (a ```json fence or surrounding prose tolerated) checked against a schema; never throws. */
export function safeParseJson<T>({ text, schema }: { text: string; schema: z.ZodType<T> }): SafeParseResult<T> {
  let value: unknown;
  try {
    value = JSON.parse(extractJson(text));
  } catch (err) {
    return { success: false, error: { kind: "parse", message: (err as Error).message, text } };
  }
  return safeValidate({ value, schema, text });
}

/** A value already decoded (from YAML, from a request body) checked against a schema; never throws. */
export function safeValidate<T>({ value, schema, text }: { value: unknown; schema: z.ZodType<T>; text?: string }): SafeParseResult<T, JsonValidationError> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { success: true, value: parsed.data, rawValue: value };
  return {
    success: false,
    error: { kind: "validation", message: z.prettifyError(parsed.error), text: text ?? JSON.stringify(value) ?? String(value), issues: parsed.error.issues, value },
  };
}

/**
 * A JSON file the project wrote (a report, a launcher's record, a build's) checked against its
 * schema: undefined when the file is missing, not JSON or not of that shape, so a reader treats a
 * torn or foreign file as absent instead of trusting a cast.
 */
export function readJsonFile<T>(path: string, schema: z.ZodType<T>): T | undefined {
  if (!existsSync(path)) return undefined;
  const parsed = safeParseJson({ text: readFileSync(path, "utf8"), schema });
  return parsed.success ? parsed.value : undefined;
}
