/**
 * The configs on the wire (proto/research/v1/model.proto) against the zod schemas people and
 * LLMs write them in: the same layers and fields on both sides, and every config the swarm
 * authors travelling through the binary encoding and back unchanged, authored or with its
 * defaults filled. Events stored before the types still load, by the one legacy reader.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { briefMessage, briefOfMessage, briefSent, modelOfSpec, modelSent, modelSpec, trainOfSpec, trainSent, trainSpec } from "../../core/config-wire.js";
import { CodeModelSchema, LayerSchema, ModelConfigSchema, TrainConfigSchema, parseTrainConfig, parseTrialModel, type TrialModelInput } from "../../core/model-config.js";
import { BriefSchema, parseBrief, type Brief } from "../../core/brief.js";
import { TASKS } from "../../core/tasks/index.js";
import { ClassSpecSchema, LayerSpecSchema, ModelSpecSchema, NetworkSpecSchema, TrainSpecSchema } from "../../proto/gen/research/v1/model_pb.js";
import { BriefSchema as BriefMessageSchema, TrialProposedSchema } from "../../proto/gen/research/v1/events_pb.js";
import { DatasetInfoSchema, Task } from "../../proto/gen/research/v1/runner_pb.js";
import type { DescMessage } from "@bufbuild/protobuf";

const zodFields = (s: z.ZodType) => Object.keys((s as unknown as { shape: Record<string, unknown> }).shape).sort();
const protoFields = (d: DescMessage) => d.fields.map((f) => f.name).sort();

/** The message through its bytes and back: what a subscriber or the event log sees. */
const overTheWire = <T>(m: T, schema: DescMessage) => fromBinary(schema, toBinary(schema, m as never)) as T;

describe("the config messages and the zod schemas", () => {
  it("name the same layers, each with the same fields", () => {
    const cases = LayerSpecSchema.oneofs[0]!.fields;
    expect(cases.map((f) => f.name).sort()).toEqual(LayerSchema.options.map((o) => o.shape.type.value).sort());
    for (const option of LayerSchema.options) {
      const kase = cases.find((f) => f.name === option.shape.type.value)!;
      expect(protoFields(kase.message!), option.shape.type.value).toEqual(zodFields(option).filter((k) => k !== "type"));
    }
    expect(protoFields(NetworkSpecSchema)).toEqual(zodFields(ModelConfigSchema));
    expect(protoFields(ClassSpecSchema)).toEqual(zodFields(CodeModelSchema));
    expect(protoFields(BriefMessageSchema)).toEqual(zodFields(BriefSchema));
  });

  it("carry every template of every task module, and every layer with each field at a falsy value, unchanged", () => {
    const models: TrialModelInput[] = [];
    for (const task of TASKS) {
      for (const d of task.datasets) {
        const info = create(DatasetInfoSchema, { name: d.name, task: Task.CLASSIFICATION, inputShape: task.name === "text" ? [64] : [3, 32, 32], numClasses: 10, inputDtype: task.name === "text" ? "int64" : "float32" });
        for (const device of ["cpu", "cuda"] as const) for (const t of task.templates(info, device)) models.push(t.build(info, 1));
      }
    }
    // Zeros and falses that must not read back as "left to the default".
    models.push({
      name: "edges",
      description: "",
      input_shape: [1, 28, 28],
      num_classes: 10,
      input_dtype: "float32",
      tie_embeddings: false,
      layers: [
        { type: "conv2d", out_channels: 4, padding: 0, bias: false },
        { type: "conv2d", out_channels: 4, padding: "same" },
        { type: "maxpool", padding: 0 },
        { type: "dropout", p: 0 },
        { type: "residual", layers: [{ type: "activation", fn: "gelu" }, { type: "groupnorm", groups: 1 }], activation: "none" },
        { type: "mbconv", out_channels: 8, se_ratio: 0 },
        { type: "embedding", vocab_size: 256, padding_idx: 0 },
        { type: "token_pool", mode: "max" },
        { type: "flatten" },
      ],
    });
    models.push({ name: "mine", class_name: "Net", init_kwargs: { width: 32, dropout: 0, residual: false, lr_scale: 0.5 }, code_edit: "make the first block wider please", source_trial: "t-abc" });
    models.push({ name: "plain", class_name: "Net", init_kwargs: {} });
    expect(models.length).toBeGreaterThan(20);
    for (const m of models) {
      const back = modelOfSpec(overTheWire(modelSpec(m), ModelSpecSchema));
      expect(back, m.name).toEqual(m);
      // And with its defaults filled, as the planner sends it.
      const full = parseTrialModel(m);
      expect(full.ok, m.name).toBe(true);
      if (full.ok) expect(modelOfSpec(overTheWire(modelSpec(full.value), ModelSpecSchema)), m.name).toEqual(full.value);
    }
  });

  it("carry a train config as authored (what it left out stays out) and with its defaults filled", () => {
    const authored = [{}, { epochs: 3, subset: 6000 }, { optimizer: "sgd", lr: 0.05, momentum: 0, nesterov: false }, { augment: { hflip: true, cutout: 8 }, schedule: "cosine" }] as const;
    for (const t of authored) {
      expect(trainOfSpec(overTheWire(trainSpec(t), TrainSpecSchema))).toEqual("optimizer" in t ? { optimizer: "sgd", lr: 0.05, momentum: 0 } : t);
      const full = TrainConfigSchema.parse(t);
      expect(TrainConfigSchema.parse(trainOfSpec(overTheWire(trainSpec(full), TrainSpecSchema)))).toEqual(full);
    }
  });

  it("carry a brief unchanged", () => {
    const brief: Brief = {
      summary_title: "Wider residual nets",
      insights: ["width beats depth at this size"],
      architectural_suggestions: [{ name: "wide", description: "widen", implementation_note: "x2 channels", building_blocks: ["conv2d", "residual"], buildable: true }],
      sources: [{ title: "WRN", url: "https://arxiv.org/abs/1605.07146" }],
    };
    expect(briefOfMessage(overTheWire(briefMessage(brief), BriefMessageSchema))).toEqual(brief);
  });

  it("read what events stored before the types carried: JSON text, once, here", () => {
    const model = { name: "old", layers: [{ type: "flatten" }, { type: "linear", out_features: 10 }] };
    const old = create(TrialProposedSchema, { modelConfigJson: JSON.stringify(model), trainConfigJson: JSON.stringify({ epochs: 2 }) });
    const m = parseTrialModel(modelSent(old));
    expect(m.ok && m.value.name).toBe("old");
    const t = parseTrainConfig(trainSent(old));
    expect(t.ok && t.value.epochs).toBe(2);
    const typed = create(TrialProposedSchema, { model: modelSpec(model as TrialModelInput), train: trainSpec({ epochs: 5 }) });
    const t2 = parseTrainConfig(trainSent(typed));
    expect(t2.ok && t2.value.epochs).toBe(5);
    // An intervention without a train config takes every default.
    expect(trainSent(create(TrialProposedSchema))).toEqual({});
    const brief = { summary_title: "t", insights: [], architectural_suggestions: [], sources: [] };
    expect(parseBrief(briefSent({ briefJson: JSON.stringify(brief) })).ok).toBe(true);
    expect(parseBrief(briefSent({ brief: briefMessage(brief), briefJson: "" })).ok).toBe(true);
  });
});
