/**
 * The research brief: what the researcher hands the planner (as
 * BriefReady.brief_json). Same JSON shape as the seed MVP's documents, so
 * briefs written by the built-in researcher, by an LLM, or by hand all pass
 * through one schema.
 */
import { z } from "zod";

/** Layer names the coder can assemble from a model_config. */
export const LAYER_BLOCKS = [
  "conv2d",
  "depthwise_conv2d",
  "pointwise_conv2d",
  "batchnorm",
  "groupnorm",
  "layernorm",
  "activation:relu",
  "activation:gelu",
  "activation:silu",
  "activation:mish",
  "maxpool",
  "avgpool",
  "global_avgpool",
  "dropout",
  "dropout2d",
  "flatten",
  "linear",
  "residual",
  "se",
  "ghost",
  "mbconv",
  "patch_embed",
  "transformer_encoder",
  "mixer_block",
  "token_pool",
  "embedding",
  "conv1d",
  "sequence_pool",
] as const;

/** Training-recipe knobs a train_config can set. */
export const RECIPE_KNOBS = [
  "sgd",
  "adam",
  "adamw",
  "cosine_schedule",
  "step_schedule",
  "onecycle_schedule",
  "warmup",
  "weight_decay",
  "label_smoothing",
  "grad_clip",
  "hflip",
  "random_crop",
  "cutout",
] as const;

/**
 * The vocabulary a suggestion is "buildable" in. The coder owns what it can
 * compile; this list must grow with it, or buildable briefs will lie.
 */
export const CODER_VOCABULARY: readonly string[] = [...LAYER_BLOCKS, ...RECIPE_KNOBS];
export type BuildingBlock = (typeof LAYER_BLOCKS)[number] | (typeof RECIPE_KNOBS)[number];

export function isCoderBlock(name: string): name is BuildingBlock {
  return CODER_VOCABULARY.includes(name);
}

export const BriefSourceSchema = z.object({
  title: z.string().min(1),
  url: z.url(),
});

export const ArchitecturalSuggestionSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().min(1),
    implementation_note: z.string().min(1),
    // Free strings, not an enum: an LLM may name ideas the coder lacks, and `buildable` says so.
    building_blocks: z.array(z.string().min(1)).optional(),
    buildable: z.boolean().optional(),
  })
  .superRefine((s, ctx) => {
    if (s.buildable !== true) return;
    if (!s.building_blocks?.length) {
      ctx.addIssue({ code: "custom", path: ["building_blocks"], message: "buildable is true but no building blocks are named" });
      return;
    }
    s.building_blocks.forEach((block, i) => {
      if (!isCoderBlock(block)) {
        ctx.addIssue({ code: "custom", path: ["building_blocks", i], message: `"${block}" is not in the coder vocabulary, so buildable cannot be true` });
      }
    });
  });

export const BriefSchema = z.object({
  summary_title: z.string().min(1),
  insights: z.array(z.string().min(1)),
  architectural_suggestions: z.array(ArchitecturalSuggestionSchema),
  sources: z.array(BriefSourceSchema),
});

export type Brief = z.infer<typeof BriefSchema>;
export type ArchitecturalSuggestion = z.infer<typeof ArchitecturalSuggestionSchema>;
export type BriefSource = z.infer<typeof BriefSourceSchema>;

export interface BriefIssue {
  /** e.g. "architectural_suggestions[2].name"; "" for the document itself. */
  path: string;
  message: string;
}

export type BriefParse = { ok: true; brief: Brief } | { ok: false; error: string; issues: BriefIssue[] };

export function issuePath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)), "");
}

/**
 * Validates a brief given as a value or as JSON text (a ```json fence is
 * tolerated because LLMs without structured outputs add one).
 */
export function parseBrief(input: unknown): BriefParse {
  let value = input;
  if (typeof input === "string") {
    const text = input.trim().replace(/^```(?:json)?\s*\n([\s\S]*?)\n?```$/, "$1");
    try {
      value = JSON.parse(text);
    } catch (err) {
      const message = `not JSON: ${(err as Error).message}`;
      return { ok: false, error: `brief is ${message}`, issues: [{ path: "", message }] };
    }
  }
  const parsed = BriefSchema.safeParse(value);
  if (parsed.success) return { ok: true, brief: parsed.data };
  const issues = parsed.error.issues.map((i) => ({ path: issuePath(i.path), message: i.message }));
  return { ok: false, error: `brief is invalid: ${issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ")}`, issues };
}

/** JSON Schema of the brief for LLM structured outputs (refinements such as the buildable check are not expressible there). */
export function briefJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(BriefSchema) as Record<string, unknown>;
}
