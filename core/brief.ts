/**
 * The research brief: what the researcher hands the planner (as
 * BriefReady.brief_json). Same JSON shape as the seed MVP's documents, so
 * briefs written by the built-in researcher, by an LLM, or by hand all pass
 * through one schema.
 */
import { z } from "zod";
import { RECIPE_DEFAULTS } from "./space.js";
import { safeParseJson, safeValidate } from "./json.js";

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
  "ngram_embedding",
  "conv1d",
  "gru",
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
  "tta",
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
  const parsed = typeof input === "string" ? safeParseJson({ text: input, schema: BriefSchema }) : safeValidate({ value: input, schema: BriefSchema });
  if (parsed.success) return { ok: true, brief: parsed.value };
  if (parsed.error.kind === "parse") {
    const message = `not JSON: ${parsed.error.message}`;
    return { ok: false, error: `brief is ${message}`, issues: [{ path: "", message }] };
  }
  const issues = parsed.error.issues.map((i) => ({ path: issuePath(i.path), message: i.message }));
  return { ok: false, error: `brief is invalid: ${issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ")}`, issues };
}

/** JSON Schema of the brief for LLM structured outputs (refinements such as the buildable check are not expressible there). */
export function briefJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(BriefSchema) as Record<string, unknown>;
}

/**
 * The coder-vocabulary blocks a trial's configs contain (model_config and train_config as
 * authored; a recipe knob left out takes its default). What a trial is said to adopt from a
 * brief is read from here, never from what its proposer claimed.
 */
export function blocksOf(model: unknown, train: unknown): Set<string> {
  const blocks = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (typeof o.type === "string") blocks.add(o.type === "activation" ? `activation:${String(o.fn ?? "relu")}` : o.type);
    if (typeof o.activation === "string" && o.activation !== "none") blocks.add(`activation:${o.activation}`);
    for (const x of Object.values(o)) if (typeof x === "object") walk(x);
  };
  const layers = (model as { layers?: unknown } | undefined)?.layers;
  walk(layers);
  // Every compiled model ends in a linear map to its outputs: the compiler's implicit head where its layers do not.
  if (Array.isArray(layers) && layers.length) blocks.add("linear");
  const t = (train ?? {}) as { optimizer?: string; schedule?: string; warmup_epochs?: number; weight_decay?: number; label_smoothing?: number; grad_clip?: number; tta_hflip?: boolean; augment?: { hflip?: boolean; crop_padding?: number; cutout?: number } };
  blocks.add(t.optimizer ?? RECIPE_DEFAULTS.optimizer);
  const schedule = t.schedule ?? RECIPE_DEFAULTS.schedule;
  if (schedule !== "none") blocks.add(`${schedule}_schedule`);
  const on: [string, unknown][] = [
    ["warmup", t.warmup_epochs], ["weight_decay", t.weight_decay], ["label_smoothing", t.label_smoothing], ["grad_clip", t.grad_clip],
    ["hflip", t.augment?.hflip], ["random_crop", t.augment?.crop_padding], ["cutout", t.augment?.cutout], ["tta", t.tta_hflip],
  ];
  for (const [block, v] of on) if (v) blocks.add(block);
  return blocks;
}

/**
 * What any model of its kind is made of: a first trial adopts from a brief only what it holds
 * beyond these (every CNN has a conv2d; that does not make it a convolutional transformer).
 */
const PLAIN_BLOCKS = new Set<string>(["conv1d", "conv2d", "linear", "flatten", "embedding", "activation:relu", "maxpool", RECIPE_DEFAULTS.optimizer]);

/**
 * The briefs' suggestions a trial adopted, each with the blocks that say so: a suggestion whose
 * every block the trial's configs hold, some of them new over its parent's (for a first trial:
 * beyond PLAIN_BLOCKS), with those new blocks. Credit only for what a config contains: a
 * suggestion one of whose blocks the trial lacks (one the coder cannot build, or SGD's for an
 * Adam recipe) is not adopted by it; one that names no blocks cannot be checked, so is never claimed.
 */
export function adoptedConcepts(briefs: Brief[], blocks: Set<string>, parentBlocks: Set<string> = PLAIN_BLOCKS): { name: string; blocks: string[] }[] {
  const found = new Map<string, string[]>();
  for (const s of briefs.flatMap((b) => b.architectural_suggestions)) {
    const named = s.building_blocks ?? [];
    if (!named.every((b) => blocks.has(b))) continue;
    const brought = named.filter((b) => !parentBlocks.has(b));
    if (brought.length && !found.has(s.name)) found.set(s.name, brought);
  }
  return [...found].map(([name, blocks]) => ({ name, blocks }));
}
