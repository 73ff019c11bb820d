/**
 * One recipe schema for the three places that read a recipe: the train_config an author
 * writes, the runner's request check, and the Python worker's spec check. Every field,
 * bound and default is compared, not sampled.
 */
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { recipeJsonSchema, recipeOf, trainConfigOfRecipe } from "../../core/recipe.js";
import { TrainConfigSchema } from "../../core/model-config.js";
import { planEvaluation } from "../../gpu-runner/request.js";
import { EvaluateRequestSchema, RecipeSchema } from "../../proto/gen/research/v1/runner_pb.js";
import { RECIPE_SCHEMA_FILE, recipeSchemaText } from "../../scripts/gen-recipe-schema.js";
import { run } from "../helpers/run.js";

interface Field {
  type: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  properties?: Record<string, Field>;
}

const SCHEMA = recipeJsonSchema() as unknown as { properties: Record<string, Field> };
const { subset: _subset, ...DEFAULT_RECIPE } = TrainConfigSchema.parse({});

/** Each field at and just beyond each of its bounds, and a wrong type: [path, value]. */
function probes(props: Record<string, Field>, prefix: string[] = []): Array<[string[], unknown]> {
  const out: Array<[string[], unknown]> = [];
  for (const [key, f] of Object.entries(props)) {
    const path = [...prefix, key];
    if (f.type === "object") {
      out.push(...probes(f.properties!, path));
      continue;
    }
    if (f.enum) out.push(...f.enum.map((v): [string[], unknown] => [path, v]), [path, "nope"]);
    if (f.type === "boolean") out.push([path, true], [path, 1]);
    if (f.type === "number" || f.type === "integer") {
      const step = f.type === "integer" ? 1 : 1e-6;
      for (const b of [f.minimum, f.maximum, f.exclusiveMinimum, f.exclusiveMaximum]) {
        if (b !== undefined) out.push([path, b], [path, b - step], [path, b + step]);
      }
      if (f.type === "integer") out.push([path, 2.5]);
      out.push([path, "1"]);
    }
  }
  return out;
}

function withValue(path: string[], value: unknown): Record<string, unknown> {
  const recipe = structuredClone(DEFAULT_RECIPE) as unknown as Record<string, unknown>;
  let at = recipe;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[path.at(-1)!] = value;
  return recipe;
}

const PYTHON_VERDICTS = `
import json, sys
sys.path.insert(0, "gpu-runner/python")
import specs
from failures import TaskFailure
out = []
for recipe in json.load(sys.stdin):
    try:
        specs._recipe({"recipe": recipe})
        out.append(None)
    except TaskFailure as e:
        out.append(str(e))
print(json.dumps(out))
`;

describe("the recipe schema", () => {
  it("is what the worker reads: gpu-runner/python/recipe_schema.json is generated from the train_config schema", () => {
    expect(readFileSync(RECIPE_SCHEMA_FILE, "utf8"), "stale: run npx tsx scripts/gen-recipe-schema.ts").toBe(recipeSchemaText());
  });

  it("accepts and refuses exactly what the Python worker does, field by field at every bound", async () => {
    const cases = probes(SCHEMA.properties);
    expect(cases.length).toBeGreaterThan(80);
    const recipes = cases.map(([path, value]) => withValue(path, value));
    const ran = await run(".venv/bin/python", ["-c", PYTHON_VERDICTS], { timeout: 120_000, input: JSON.stringify(recipes) });
    expect(ran.status, ran.stderr).toBe(0);
    const python = JSON.parse(ran.stdout) as Array<string | null>;
    const disagreements = cases.flatMap(([path, value], i) => {
      const ts = TrainConfigSchema.safeParse(recipes[i]).success;
      return ts === (python[i] === null) ? [] : [`${path.join(".")} = ${JSON.stringify(value)}: TypeScript ${ts ? "accepts" : "refuses"}, Python ${python[i] ?? "accepts"}`];
    });
    expect(disagreements).toEqual([]);
  });

  it("words a bound the same way on both sides", async () => {
    const ran = await run(".venv/bin/python", ["-c", PYTHON_VERDICTS], { timeout: 120_000, input: JSON.stringify([withValue(["ema_decay"], 1)]) });
    const [python] = JSON.parse(ran.stdout) as string[];
    expect(python).toBe("recipe.ema_decay = 1.0: expected in [0, 1)");
    const runner = trainConfigOfRecipe(create(RecipeSchema, { emaDecay: 1 }));
    expect(runner).toEqual({ ok: false, error: "recipe.ema_decay 1 must be in [0, 1)" });
  });
});

describe("the runner's recipe", () => {
  const job = (recipe: Parameters<typeof create<typeof RecipeSchema>>[1]) =>
    planEvaluation(create(EvaluateRequestSchema, { model: { code: "x = 1\n", className: "Net" }, dataset: { name: "digits" }, recipe }), []).job.recipe;

  it("fills every unset field with the train_config schema's default", () => {
    expect(job({})).toEqual(DEFAULT_RECIPE);
  });

  it("carries a validated train_config through the wire unchanged, momentum 0 included", () => {
    const train = TrainConfigSchema.parse({ optimizer: "sgd", lr: 0.1, momentum: 0, schedule: "step", step_size: 4, epochs: 9, augment: { cutout: 8 } });
    const { subset: _inDataset, ...expected } = train;
    expect(job(recipeOf(train))).toEqual(expected);
    expect(job({}).momentum).toBe(0.9);
  });
});
