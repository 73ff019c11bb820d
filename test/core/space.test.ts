/** The search space's table and what derives from it: the schema, the wire, the surrogate's encoding, and a person's narrowed space. */
import { describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { recipeJsonSchema, recipeOf, trainConfigOfRecipe } from "../../core/recipe.js";
import { TrainConfigSchema, type TrainConfig } from "../../core/model-config.js";
import { describeSpace, dimension, drawIn, intoSpace, outsideSpace, parseSpace, RECIPE_FEATURES, SEARCHED, SPACE, spaceMessage, spaceOf, type SpaceSpec } from "../../core/space.js";
import { GENOME_SPACE, genomeFeatures } from "../../agents/planner/surrogate.js";
import { mulberry32 } from "../../agents/planner/proposals.js";
import { SearchSpaceSchema } from "../../proto/gen/research/v1/events_pb.js";
import { DatasetInfoSchema, RecipeSchema } from "../../proto/gen/research/v1/runner_pb.js";

const FASHION = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32" });
const camel = (s: string) => s.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** A row's JSON Schema, where the worker checks it. */
function jsonField(name: string): Record<string, unknown> | undefined {
  const [head, leaf] = name.split(".");
  const top = recipeJsonSchema().properties[head!] as { properties?: Record<string, unknown> } | undefined;
  return (leaf ? top?.properties?.[leaf] : top) as Record<string, unknown> | undefined;
}

describe("the search space table", () => {
  it("is every field of the train_config, the worker's JSON Schema and the proto Recipe: a row misses none", () => {
    const parsed = TrainConfigSchema.parse({});
    for (const row of SPACE) {
      const [head, leaf] = row.name.split(".") as [keyof TrainConfig, string | undefined];
      const value = leaf ? (parsed[head] as Record<string, unknown>)[leaf] : parsed[head];
      // lr's default is its optimizer's; every other row's is the schema's.
      if (row.name === "lr") expect(value).toBe(1e-3);
      else expect(value, row.name).toBe(row.default);
      if (row.name === "subset") continue; // in the dataset spec, not the recipe
      expect(jsonField(row.name), row.name).toBeDefined();
      const top = RecipeSchema.fields.find((f) => f.localName === camel(head));
      const wire = leaf ? top?.message?.fields.find((f) => f.localName === camel(leaf)) : top;
      expect(wire, `proto Recipe lacks ${row.name}`).toBeDefined();
    }
    // And nothing in the schema or on the wire that is not a row.
    const rows = new Set(SPACE.map((r) => r.name.split(".")[0]));
    expect(Object.keys(recipeJsonSchema().properties).filter((k) => !rows.has(k))).toEqual([]);
    expect(RecipeSchema.fields.map((f) => f.localName).filter((k) => ![...rows].some((r) => camel(r!) === k))).toEqual([]);
  });

  it("carries a recipe whose every field differs from its default over the wire and back unchanged", () => {
    const recipe = TrainConfigSchema.parse({
      optimizer: "sgd", lr: 0.2, momentum: 0, nesterov: false, weight_decay: 5e-4, schedule: "step", warmup_epochs: 1, step_size: 3, gamma: 0.5,
      label_smoothing: 0.1, grad_clip: 1, batch_size: 64, epochs: 9, augment: { hflip: true, crop_padding: 2, cutout: 7 },
      amp: true, channels_last: true, deterministic: true, ema_decay: 0.99, train_seconds: 30, context: 64,
    });
    const wire = fromBinary(RecipeSchema, toBinary(RecipeSchema, create(RecipeSchema, recipeOf(recipe))));
    // momentum 0 is a value (presence is tracked); subset travels in the dataset spec.
    expect(trainConfigOfRecipe(wire)).toEqual({ ok: true, value: { ...recipe, subset: 0 } });
    expect(trainConfigOfRecipe(create(RecipeSchema, {}))).toEqual({ ok: true, value: TrainConfigSchema.parse({}) });
  });

  it("encodes a recipe for the surrogate by its rows, beside the model's own features", () => {
    expect(GENOME_SPACE).toHaveLength(5 + RECIPE_FEATURES.length);
    const x = genomeFeatures({ name: "m", layers: [{ type: "flatten" }, { type: "linear", out_features: 10 }] }, { optimizer: "adamw", lr: 0.01, batch_size: 256 }, 1000);
    const at = (name: string) => x[GENOME_SPACE.findIndex((d) => d.name === name)];
    expect(at("log10_lr")).toBeCloseTo(-2);
    expect(at("optimizer")).toBe(1);
    expect(at("log2_batch_size")).toBe(8);
    expect(at("log10_params")).toBe(3);
  });
});

describe("a person's space (launch --space)", () => {
  const ok = (doc: unknown): SpaceSpec => {
    const r = parseSpace(doc);
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };

  it("takes a value, a range, a set of values or the default per dimension, and template families", () => {
    const s = ok({ families: ["vgg-cnn"], lr: { low: 1e-4, high: 1e-2 }, optimizer: { values: ["adam", "adamw"] }, weight_decay: 0, label_smoothing: "default", "augment.hflip": true });
    expect(s).toEqual({
      families: ["vgg-cnn"],
      dims: { lr: { low: 1e-4, high: 1e-2 }, optimizer: { values: ["adam", "adamw"] }, weight_decay: { values: [0] }, label_smoothing: { values: [0] }, "augment.hflip": { values: [true] } },
    });
    expect(describeSpace(s)).toEqual(["families vgg-cnn", "lr in [0.0001, 0.01]", "optimizer one of adam, adamw", "weight_decay fixed at 0", "label_smoothing fixed at 0", "augment.hflip fixed at true"]);
    // Through the run's settings and back, as the planner and the report read it.
    const wire = fromBinary(SearchSpaceSchema, toBinary(SearchSpaceSchema, create(SearchSpaceSchema, spaceMessage(s))));
    expect(spaceOf(wire)).toEqual(s);
    expect(spaceOf(undefined)).toEqual({ families: [], dims: {} });
  });

  it("refuses what it cannot search in one line that names the dimension and what it takes", () => {
    const cases: [unknown, string][] = [
      [{ lrr: 0.1 }, `space: unknown dimension "lrr"; the search's dimensions are ${SEARCHED.join(", ")} (and families)`],
      [{ epochs: 5 }, "space: epochs is not searched (epochs are the scheduler's fidelity: --epochs sets the probes', the time budget and --last-epochs the last training's); set it with a --recipe or a flag instead"],
      [{ lr: 20 }, "space: lr 20 is not in (0, 10]"],
      [{ lr: { low: 0.01, high: 0.001 } }, "space: lr low 0.01 is above high 0.001"],
      [{ lr: { low: -1 } }, "space: lr -1 is not in (0, 10] (its low)"],
      [{ optimizer: "lion" }, 'space: optimizer "lion" is not one of adam, adamw, sgd'],
      [{ optimizer: { low: 1, high: 2 } }, "space: optimizer takes {values: [...]}, not a range: it is one of adam, adamw, sgd"],
      [{ batch_size: { values: [64, 12.5] } }, "space: batch_size 12.5 is not in [1, 65536]"],
      [{ lr: "default" }, "space: lr has no single default (it is the optimizer's): pin a value instead"],
      [{ lr: { min: 1 } }, 'space: lr takes a value, {low, high}, {values: [...]} or "default"; got keys min'],
      [{ families: "vgg-cnn" }, "space: families must be a list of template names, e.g. [vgg-cnn, resnet]"],
      [["lr"], "space: expected a mapping of dimensions, e.g. {lr: {low: 1e-4, high: 1e-2}, optimizer: {values: [adam, adamw]}}"],
    ];
    for (const [doc, message] of cases) {
      const r = parseSpace(doc);
      expect(r, JSON.stringify(doc)).toEqual({ ok: false, error: message });
      expect(message).not.toContain("\n");
    }
  });

  it("says why a recipe lies outside it, moves a recipe into it, and draws within it", () => {
    const s = ok({ lr: { low: 1e-4, high: 1e-3 }, optimizer: { values: ["adamw", "sgd"] }, batch_size: { values: [64] } });
    expect(outsideSpace(s, { optimizer: "adamw", lr: 5e-4, batch_size: 64 })).toBeUndefined();
    expect(outsideSpace(s, { optimizer: "adamw", lr: 2e-3, batch_size: 64 })).toBe("lr 0.002 is outside the space: in [0.0001, 0.001]");
    // An absent field is its default: adam, the default optimizer, is outside.
    expect(outsideSpace(s, { lr: 5e-4, batch_size: 64 })).toBe("optimizer adam is outside the space: one of adamw, sgd");
    const moved = intoSpace(s, { optimizer: "adam" as const, lr: 2e-3, batch_size: 256, epochs: 3 });
    expect(moved).toEqual({ optimizer: "adamw", lr: 1e-3, batch_size: 64, epochs: 3 });
    expect(outsideSpace(s, moved)).toBeUndefined();
    const rng = mulberry32(3);
    for (let i = 0; i < 50; i++) {
      const lr = drawIn(s, "lr", rng, "cpu", FASHION) as number;
      expect(lr).toBeGreaterThanOrEqual(3e-4); // the prior's low end, inside the person's range
      expect(lr).toBeLessThanOrEqual(1e-3);
      expect(["adamw", "sgd"]).toContain(drawIn(s, "optimizer", rng, "cpu", FASHION));
      expect(drawIn(s, "batch_size", rng, "cpu", FASHION)).toBe(64);
    }
    // With no space, the prior itself.
    const batch = new Set(Array.from({ length: 60 }, () => drawIn({ families: [], dims: {} }, "batch_size", rng, "cuda", FASHION)));
    expect(batch).toEqual(new Set([256, 512, 1024]));
    expect(dimension("augment.cutout")?.surface).toBe("regularisation");
  });
});
