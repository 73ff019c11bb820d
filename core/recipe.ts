/**
 * A training recipe in its three forms, from one table (core/space.ts) by way of one schema (TrainConfigSchema):
 * the train_config people, the planner and LLMs author; the proto Recipe on
 * the wire, where 0 or an unspecified enum means "not set"; and the JSON
 * Schema the Python worker checks every job's recipe against
 * (gpu-runner/python/recipe_schema.json, written by scripts/gen-recipe-schema.ts
 * and checked against this file by test/core/recipe.test.ts). One set of
 * fields, bounds and defaults: the runner fills an unset field with the
 * schema's default, whoever sent the request.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { z } from "zod";
import { formatPath, TrainConfigSchema, valueAt, type ParseResult, type TrainConfig } from "./model-config.js";
import { authoredFromWire, wireFields } from "./space.js";
import type { Recipe, RecipeSchema } from "../proto/gen/research/v1/runner_pb.js";

/** The wire form of a validated train_config (its `subset` travels in the dataset spec): the rows' fields, camelCased (core/space.ts). */
export function recipeOf(t: TrainConfig): MessageInitShape<typeof RecipeSchema> {
  return wireFields(t) as MessageInitShape<typeof RecipeSchema>;
}

/** A wire recipe as the train_config it stands for, validated by the one schema. */
export function trainConfigOfRecipe(r: Recipe | undefined): ParseResult<TrainConfig> {
  const authored = authoredFromWire(r as unknown as Record<string, unknown> | undefined);
  const parsed = TrainConfigSchema.safeParse(authored);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, error: parsed.error.issues.map((i) => recipeIssue(i, valueAt(authored, i.path))).join("; ") };
}

interface Bounds {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

/** "in [0, 1)", "one of adam, adamw, sgd", ">= 0": a field's bounds as the runner and the worker both say them. */
export function boundsText(b: Bounds): string {
  if (b.enum) return `one of ${b.enum.join(", ")}`;
  const lo = b.exclusiveMinimum ?? b.minimum;
  const hi = b.exclusiveMaximum ?? b.maximum;
  const open = b.exclusiveMinimum !== undefined ? "(" : "[";
  const close = b.exclusiveMaximum !== undefined ? ")" : "]";
  if (lo !== undefined && hi !== undefined) return `in ${open}${lo}, ${hi}${close}`;
  if (lo !== undefined) return `${open === "(" ? ">" : ">="} ${lo}`;
  if (hi !== undefined) return `${close === ")" ? "<" : "<="} ${hi}`;
  return b.type ?? "valid";
}

/** Issues a field's own bounds explain; the rest (a rule across fields) keep the schema's message. */
const BOUNDS_ISSUES = new Set(["too_big", "too_small", "invalid_type", "invalid_value"]);

function recipeIssue(issue: z.core.$ZodIssue, value: unknown): string {
  const field = fieldSchema(issue.path);
  const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
  const where = `recipe.${formatPath(issue.path)}`;
  if (!field || !BOUNDS_ISSUES.has(issue.code)) return `${where} ${shown}: ${issue.message}`;
  return field.enum ? `${where} ${shown} is not ${boundsText(field)}` : `${where} ${shown} must be ${boundsText(field)}`;
}

function fieldSchema(path: readonly PropertyKey[]): Bounds | undefined {
  let cur: { properties?: Record<string, unknown> } | undefined = recipeJsonSchema();
  for (const k of path) cur = cur?.properties?.[String(k)] as typeof cur;
  return cur as Bounds | undefined;
}

let jsonSchema: Record<string, unknown> & { properties: Record<string, unknown> } | undefined;

/**
 * The recipe's fields, types, bounds and defaults as JSON Schema (draft 2020-12): what the
 * worker's specs.py validates a job's recipe with. `subset` is the dataset spec's.
 */
export function recipeJsonSchema(): Record<string, unknown> & { properties: Record<string, unknown> } {
  if (!jsonSchema) {
    // The input side: the output's lr default is a transform, which JSON Schema cannot say. The worker is sent every field.
    const full = z.toJSONSchema(TrainConfigSchema, { io: "input" }) as Record<string, unknown> & { properties: Record<string, unknown> };
    const { subset: _inDatasetSpec, ...properties } = full.properties;
    jsonSchema = { ...full, properties, required: Object.keys(properties) };
  }
  return jsonSchema;
}
