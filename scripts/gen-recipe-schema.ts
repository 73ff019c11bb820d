/**
 * Writes the recipe's JSON Schema (core/recipe.ts) where the Python worker reads it:
 * gpu-runner/python/recipe_schema.json. Run it after changing TrainConfigSchema and
 * commit the result; test/core/recipe.test.ts fails while the file is stale.
 *   npx tsx scripts/gen-recipe-schema.ts [OUT]
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { recipeJsonSchema } from "../core/recipe.js";

export const RECIPE_SCHEMA_FILE = fileURLToPath(new URL("../gpu-runner/python/recipe_schema.json", import.meta.url));

export const recipeSchemaText = (): string => `${JSON.stringify(recipeJsonSchema(), null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(process.argv[2] ?? RECIPE_SCHEMA_FILE, recipeSchemaText());
