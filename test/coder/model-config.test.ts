import { describe, expect, it } from "vitest";
import {
  LAYER_TYPES,
  ModelConfigSchema,
  modelConfigJsonSchema,
  parseModelConfig,
  parseTrainConfig,
  trainConfigJsonSchema,
} from "../../core/model-config.js";

const CNN = {
  name: "cnn",
  input_shape: [1, 28, 28],
  num_classes: 10,
  layers: [
    { type: "conv2d", out_channels: 16 },
    { type: "activation" },
    { type: "residual", layers: [{ type: "conv2d", out_channels: 16 }, { type: "se" }] },
    { type: "global_avgpool" },
  ],
};

function errorOf(input: unknown): string {
  const r = parseModelConfig(input);
  if (r.ok) throw new Error("expected a validation error");
  return r.error;
}

describe("ModelConfigSchema", () => {
  it("parses a valid config and fills defaults", () => {
    const r = parseModelConfig(CNN);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.layers[0]).toEqual({
      type: "conv2d",
      out_channels: 16,
      kernel_size: 3,
      stride: 1,
      padding: "same",
      groups: 1,
      bias: true,
    });
    expect(r.value.layers[1]).toEqual({ type: "activation", fn: "relu" });
    expect(r.value.layers[2]).toMatchObject({ type: "residual", activation: "none", layers: [{}, { reduction: 4 }] });
  });

  it("accepts JSON text and YAML text", () => {
    const fromJson = parseModelConfig(JSON.stringify(CNN, null, 2));
    const yaml = [
      "name: cnn",
      "input_shape: [1, 28, 28]",
      "num_classes: 10",
      "layers:",
      "  - type: conv2d",
      "    out_channels: 16",
      "  - type: activation",
      "  - type: residual",
      "    layers:",
      "      - {type: conv2d, out_channels: 16}",
      "      - type: se",
      "  - type: global_avgpool",
    ].join("\n");
    const fromYaml = parseModelConfig(yaml);
    expect(fromJson).toEqual(parseModelConfig(CNN));
    expect(fromYaml).toEqual(parseModelConfig(CNN));
  });

  it("reports every issue with a precise path", () => {
    const error = errorOf({
      name: "bad",
      layers: [
        { type: "conv2d", out_channels: -4 },
        { type: "conv3d", out_channels: 8 },
        { type: "dropout", p: 2 },
        { type: "residual", layers: [{ type: "linear", out_features: 1.5 }] },
        { type: "conv2d", out_channels: 8, kernal_size: 3 },
        { type: "mbconv", out_channels: 8, kernel_size: 4 },
        { out_channels: 8 },
      ],
    });
    expect(error).toContain("layers[0].out_channels: expected a positive integer");
    expect(error).toContain('layers[1].type: unknown layer type "conv3d"; expected one of conv2d, depthwise_conv2d');
    expect(error).toContain("layers[2].p: expected a number in [0, 1)");
    expect(error).toContain("layers[3].layers[0].out_features: expected a positive integer");
    expect(error).toContain('layers[4]: unknown field "kernal_size"');
    expect(error).toContain("layers[5].kernel_size: expected an odd kernel size");
    expect(error).toContain("layers[6].type: missing layer type");
  });

  it("rejects a config without layers, and unreadable text", () => {
    expect(errorOf({ name: "empty" })).toContain("layers: required field is missing");
    expect(errorOf({ name: "empty", layers: [] })).toContain("layers: expected at least one layer");
    expect(errorOf('{"name": "x", "layers": [')).toMatch(/^model_config: not valid JSON or YAML/);
    expect(errorOf("")).toBe("model_config: empty text");
  });

  it("exports a JSON Schema with one definition per layer type", () => {
    const schema = modelConfigJsonSchema() as { $defs: { Layer: { oneOf: unknown[] } }; required: string[] };
    expect(schema.required).toEqual(["name", "layers"]);
    expect(schema.$defs.Layer.oneOf).toHaveLength(LAYER_TYPES.length);
    expect(LAYER_TYPES).toHaveLength(27);
    expect(ModelConfigSchema.safeParse(CNN).success).toBe(true);
  });
});

describe("TrainConfigSchema", () => {
  it("fills every default from an empty object", () => {
    const r = parseTrainConfig({});
    expect(r).toEqual({
      ok: true,
      value: {
        optimizer: "adam",
        lr: 1e-3,
        momentum: 0.9,
        nesterov: false,
        weight_decay: 0,
        schedule: "none",
        warmup_epochs: 0,
        step_size: 10,
        gamma: 0.1,
        label_smoothing: 0,
        grad_clip: 0,
        batch_size: 128,
        epochs: 2,
        augment: { hflip: false, crop_padding: 0, cutout: 0 },
        amp: false,
        channels_last: false,
        deterministic: false,
        ema_decay: 0,
        swa: false,
        tta_hflip: false,
        train_seconds: 0,
        context: 0,
        subset: 0,
      },
    });
  });

  it("parses YAML and rejects garbage with paths", () => {
    const r = parseTrainConfig("optimizer: sgd\nlr: 0.1\nnesterov: true\nschedule: cosine\naugment:\n  hflip: true\n");
    expect(r.ok && r.value).toMatchObject({ optimizer: "sgd", lr: 0.1, augment: { hflip: true, crop_padding: 0 } });
    const bad = parseTrainConfig({ optimizer: "lion", lr: -1, batch_size: 0, epochs: 3, warmup_epochs: 3, augment: { flip: 1 } });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.error).toContain("- optimizer:");
    expect(bad.error).toContain("- lr:");
    expect(bad.error).toContain("- batch_size: expected a positive integer");
    expect(bad.error).toContain('- augment: unknown field "flip"');
    const warm = parseTrainConfig({ epochs: 3, warmup_epochs: 3 });
    expect(!warm.ok && warm.error).toContain("warmup_epochs: expected fewer warmup epochs than epochs");
    const averages = parseTrainConfig({ swa: true, ema_decay: 0.99 });
    expect(!averages.ok && averages.error).toContain("swa: expected one weight average: swa or ema_decay, not both");
    expect((trainConfigJsonSchema() as { properties: Record<string, unknown> }).properties).toHaveProperty("augment");
  });
});
