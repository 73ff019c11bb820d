import { describe, expect, it } from "vitest";
import { adoptedConcepts, blocksOf, briefJsonSchema, CODER_VOCABULARY, isCoderBlock, issuePath, parseBrief, type Brief } from "../../core/brief.js";

const VALID: Brief = {
  summary_title: "Small CNNs for Fashion-MNIST",
  insights: ["Batch norm lets small CNNs train with higher learning rates."],
  architectural_suggestions: [
    {
      name: "Squeeze-and-Excitation",
      description: "Channel gating.",
      implementation_note: "Add an `se` layer after each conv stage, reduction 8.",
      building_blocks: ["se", "global_avgpool"],
      buildable: true,
    },
    { name: "mixup", description: "Blend examples.", implementation_note: "Needs a mixup option.", building_blocks: ["mixup"], buildable: false },
    { name: "Free-form idea", description: "No blocks named.", implementation_note: "Left to the planner." },
  ],
  sources: [{ title: "Squeeze-and-Excitation Networks", url: "https://arxiv.org/abs/1709.01507" }],
};

describe("parseBrief", () => {
  it("accepts a valid brief as a value and as JSON text", () => {
    expect(parseBrief(VALID)).toEqual({ ok: true, brief: VALID });
    expect(parseBrief(JSON.stringify(VALID))).toEqual({ ok: true, brief: VALID });
    expect(parseBrief("```json\n" + JSON.stringify(VALID, null, 2) + "\n```")).toEqual({ ok: true, brief: VALID });
  });

  it("reports precise issue paths", () => {
    const bad = {
      ...VALID,
      insights: ["ok", 3],
      architectural_suggestions: [VALID.architectural_suggestions[0], { ...VALID.architectural_suggestions[1], name: "" }, { description: "x", implementation_note: "y" }],
      sources: [{ title: "t", url: "not a url" }],
    };
    const r = parseBrief(bad);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const paths = r.issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(["insights[1]", "architectural_suggestions[1].name", "architectural_suggestions[2].name", "sources[0].url"]));
    expect(r.error).toMatch(/^brief is invalid: /);
    expect(r.error).toContain("architectural_suggestions[1].name");
  });

  it("rejects buildable suggestions that name blocks outside the coder vocabulary", () => {
    const r = parseBrief({
      ...VALID,
      architectural_suggestions: [{ ...VALID.architectural_suggestions[0], building_blocks: ["se", "mixup"], buildable: true }],
    });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual([{ path: "architectural_suggestions[0].building_blocks[1]", message: expect.stringMatching(/"mixup" is not in the coder vocabulary/) }]);
  });

  it("reports malformed JSON and a wrong top-level type", () => {
    const notJson = parseBrief("{ nope");
    expect(notJson.ok).toBe(false);
    if (!notJson.ok) expect(notJson.issues[0]?.path).toBe("");

    const notObject = parseBrief([]);
    expect(notObject.ok).toBe(false);
    if (!notObject.ok) expect(notObject.error).toMatch(/\(root\)/);
  });
});

describe("brief helpers", () => {
  it("formats issue paths", () => {
    expect(issuePath([])).toBe("");
    expect(issuePath(["a", 0, "b", 2])).toBe("a[0].b[2]");
  });

  it("knows the coder vocabulary", () => {
    expect(isCoderBlock("se")).toBe(true);
    expect(isCoderBlock("activation:gelu")).toBe(true);
    expect(isCoderBlock("cosine_schedule")).toBe(true);
    expect(isCoderBlock("mixup")).toBe(false);
    expect(new Set(CODER_VOCABULARY).size).toBe(CODER_VOCABULARY.length);
  });

  it("exports a JSON Schema for structured outputs", () => {
    const schema = briefJsonSchema() as {
      type: string;
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, { items?: { required?: string[]; properties?: Record<string, unknown> } }>;
    };
    expect(schema.type).toBe("object");
    expect(schema.required.sort()).toEqual(["architectural_suggestions", "insights", "sources", "summary_title"]);
    expect(schema.additionalProperties).toBe(false);
    const suggestion = schema.properties.architectural_suggestions?.items;
    expect(suggestion?.required?.sort()).toEqual(["description", "implementation_note", "name"]);
    expect(Object.keys(suggestion?.properties ?? {})).toContain("building_blocks");
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
  });
});

describe("the brief's vocabulary follows the coder's", () => {
  it("names exactly the layer types the compiler knows, and only activations it has", async () => {
    const { LAYER_BLOCKS } = await import("../../core/brief.js");
    const { LAYER_TYPES, ACTIVATIONS } = await import("../../core/model-config.js");
    const layers = LAYER_BLOCKS.filter((b) => !b.startsWith("activation:"));
    expect(new Set(layers)).toEqual(new Set(LAYER_TYPES.filter((t) => t !== "activation")));
    for (const b of LAYER_BLOCKS.filter((x) => x.startsWith("activation:"))) {
      expect(ACTIVATIONS as readonly string[]).toContain(b.slice("activation:".length));
    }
  });

  it("never calls a block the coder has missing", async () => {
    const { CODER_VOCABULARY } = await import("../../core/brief.js");
    const { MISSING_BLOCKS } = await import("../../research/keywords.js");
    expect(MISSING_BLOCKS.filter((b) => CODER_VOCABULARY.includes(b))).toEqual([]);
  });
});

describe("what a trial adopts from a brief", () => {
  const suggestion = (name: string, building_blocks: string[]) => ({ name, description: name, implementation_note: name, building_blocks });
  const brief: Brief = {
    summary_title: "t",
    insights: [],
    sources: [],
    architectural_suggestions: [
      suggestion("SGD with Nesterov momentum", ["sgd"]),
      suggestion("Bag of training tricks", ["cosine_schedule", "label_smoothing", "weight_decay"]),
      suggestion("SE CNN", ["conv2d", "se", "activation:relu"]),
      { name: "vague", description: "v", implementation_note: "v" },
    ],
  };
  const cnn = { layers: [{ type: "conv2d", out_channels: 8 }, { type: "activation" }, { type: "flatten" }, { type: "linear", out_features: 10 }] };
  const se = { layers: [...cnn.layers.slice(0, 2), { type: "se" }, ...cnn.layers.slice(2)] };

  it("reads blocks from the configs, defaults included", () => {
    expect([...blocksOf(cnn, {})].sort()).toEqual(["activation:relu", "adam", "conv2d", "flatten", "linear"]);
    expect(blocksOf(cnn, { optimizer: "sgd", schedule: "cosine", augment: { crop_padding: 2, cutout: 0 } })).toEqual(
      new Set(["activation:relu", "conv2d", "flatten", "linear", "sgd", "cosine_schedule", "random_crop"]),
    );
  });

  it("claims a suggestion whose every block the trial holds, for the blocks it brought in over its parent, and names them", () => {
    const names = (...a: Parameters<typeof adoptedConcepts>) => adoptedConcepts(...a).map((c) => `${c.name}: ${c.blocks.join(" ")}`);
    // A switch to Adam adopts nothing of SGD, whatever the proposer said.
    expect(names([brief], blocksOf(cnn, { optimizer: "adam" }), blocksOf(cnn, { optimizer: "sgd" }))).toEqual([]);
    expect(names([brief], blocksOf(cnn, { optimizer: "sgd" }), blocksOf(cnn, {}))).toEqual(["SGD with Nesterov momentum: sgd"]);
    // Label smoothing on top of a cosine schedule holds two of the bag's three tricks: not the bag
    // (an Adam recipe with a cosine schedule was once credited with "SGD with Nesterov momentum").
    expect(names([brief], blocksOf(cnn, { schedule: "cosine", label_smoothing: 0.1 }), blocksOf(cnn, { schedule: "cosine" }))).toEqual([]);
    // With weight decay too it holds the bag, and brought in the two tricks its parent lacked.
    expect(names([brief], blocksOf(cnn, { schedule: "cosine", label_smoothing: 0.1, weight_decay: 5e-4 }), blocksOf(cnn, { schedule: "cosine" }))).toEqual(["Bag of training tricks: label_smoothing weight_decay"]);
    // The same config again (a promotion) adopts nothing new.
    expect(names([brief], blocksOf(se, {}), blocksOf(se, {}))).toEqual([]);
    // A first trial adopts what it holds beyond a plain model: SE, not a conv layer.
    expect(names([brief], blocksOf(se, {}))).toEqual(["SE CNN: se"]);
    expect(names([brief], blocksOf(cnn, {}))).toEqual([]);
  });
});
