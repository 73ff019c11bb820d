import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { paramsCounter } from "../../agents/planner/params.js";
import { childModel, type TrainConfigInput, type TrialModel } from "../../core/model-config.js";
import { MUTATIONS, type Genome } from "../../agents/planner/mutations.js";
import { mulberry32 } from "../../agents/planner/proposals.js";
import { nextBuiltin } from "../../agents/planner/policies/builtin.js";
import { fingerprint, genomeOf } from "../../agents/planner/identity.js";
import { templatesFor } from "../../core/tasks/index.js";
import { Surface } from "../../proto/gen/research/v1/common_pb.js";
import { Decision, Verdict } from "../../proto/gen/research/v1/events_pb.js";
import { DatasetInfoSchema } from "../../proto/gen/research/v1/runner_pb.js";
import type { EventInit } from "../../bus/index.js";
import { evaluated, RUN, started, state } from "./helpers.js";
import { modelSpec, trainSpec } from "../../core/config-wire.js";

const IMAGES = create(DatasetInfoSchema, { name: "fashion-mnist", inputShape: [1, 28, 28], numClasses: 10, inputDtype: "float32", nTrain: 54000, nVal: 6000 });
const TABLES = create(DatasetInfoSchema, { name: "wine", inputShape: [13], numClasses: 3, inputDtype: "float32", nTrain: 142, nVal: 36 });
const model = { name: "m", layers: [{ type: "flatten" as const }, { type: "linear" as const, out_features: 64 }, { type: "activation" as const }] };
const same = (a: TrainConfigInput, b: TrainConfigInput) => fingerprint(model, a) === fingerprint(model, b);

describe("fingerprint", () => {
  it("is the same for configs that train identically", () => {
    expect(same({ optimizer: "adam", lr: 2e-3 }, { optimizer: "adamw", lr: 2e-3, weight_decay: 0 })).toBe(true);
    expect(same({ optimizer: "adam" }, { optimizer: "adam", lr: 1e-3, batch_size: 128, augment: {}, momentum: 0.5, nesterov: true })).toBe(true);
    expect(same({ schedule: "cosine", step_size: 3, gamma: 0.5 }, { schedule: "cosine" })).toBe(true);
    const explicit = { ...model, name: "other", layers: [{ type: "flatten" as const }, { type: "linear" as const, out_features: 64, bias: true }, { type: "activation" as const, fn: "relu" as const }] };
    expect(fingerprint(explicit, {})).toBe(fingerprint(model, {}));
  });

  it("tells apart configs that do not", () => {
    expect(same({ optimizer: "adam" }, { optimizer: "adamw", weight_decay: 0.05 })).toBe(false);
    expect(same({ optimizer: "sgd", momentum: 0.9 }, { optimizer: "sgd", momentum: 0.8 })).toBe(false);
    expect(same({ schedule: "step", step_size: 3 }, { schedule: "step" })).toBe(false);
    // torch's SGD refuses nesterov without momentum: a failure, not a twin of the plain config.
    expect(same({ optimizer: "sgd", momentum: 0, nesterov: true }, { optimizer: "sgd", momentum: 0 })).toBe(false);
  });
});

describe("a model in Python's code", () => {
  const net = { name: "net", class_name: "Net", init_kwargs: { width: 32 } };
  const edit = { ...net, code_edit: "add batch normalisation after each linear layer" };

  it("is part of its identity: the run's source, an edit to make and an edit made are three models", () => {
    const ids = [net, edit, { ...net, source_trial: "r1-t005" }].map((m) => fingerprint(m, {}));
    expect(new Set(ids).size).toBe(3);
    expect(fingerprint({ ...edit, name: "renamed" }, {})).toBe(fingerprint(edit, {}));
  });

  it("is inherited: a trial's edits start from the code its edit made, and never make the edit again", () => {
    const s = state([started(), { runId: RUN, trialId: "r1-t005", body: { case: "trialProposed", value: { model: modelSpec(edit), train: trainSpec({}) } } }]);
    const g = genomeOf(s.trials.get("r1-t005")!)!;
    expect(g.model).toEqual({ name: "net", class_name: "Net", init_kwargs: { width: 32 }, source_trial: "r1-t005" });
    // A trial that builds on an edit passes the same code on.
    expect(childModel(g.model as TrialModel, "r1-t009")).toBe(g.model);
    expect(childModel(net, "r1-t009")).toBe(net);
  });
});

describe("mutations", () => {
  const recipes: TrainConfigInput[] = [
    { optimizer: "adam", lr: 2e-3 },
    { optimizer: "adamw", lr: 2e-3 },
    { optimizer: "adamw", lr: 2e-3, weight_decay: 0.05, schedule: "cosine", label_smoothing: 0.1 },
    { optimizer: "sgd", lr: 0.05, momentum: 0.9, nesterov: true, weight_decay: 5e-4, batch_size: 64 },
  ];

  it("never yield a child that trains like its parent", () => {
    let children = 0;
    for (const info of [IMAGES, TABLES]) {
      for (const device of ["cpu", "cuda"] as const)
      for (const t of templatesFor(info, device)) {
        for (const train of recipes) {
          const parent: Genome = { model: t.build(info), train };
          for (const m of MUTATIONS) {
            for (let seed = 0; seed < 4; seed++) {
              const child = m.apply(structuredClone(parent), { info, rng: mulberry32(seed), device, arguments: [] });
              if (!child) continue;
              children++;
              expect(fingerprint(child.model, child.train), `${t.name} ${JSON.stringify(train)} ${m.name}`).not.toBe(fingerprint(parent.model, parent.train));
            }
          }
        }
      }
    }
    expect(children).toBeGreaterThan(300);
  });

  it("switch Adam to AdamW only with weight decay", () => {
    const optimizer = MUTATIONS.find((m) => m.name === "optimizer")!;
    const parent: Genome = { model, train: { optimizer: "adam", lr: 2e-3 } };
    const children = Array.from({ length: 16 }, (_, seed) => optimizer.apply(structuredClone(parent), { info: IMAGES, rng: mulberry32(seed), device: "cpu", arguments: [] })!);
    const adamw = children.filter((c) => c.train.optimizer === "adamw");
    expect(adamw.length).toBeGreaterThan(0);
    for (const c of adamw) expect(c.train.weight_decay).toBe(0.05);
  });
});

describe("the built-in planner", () => {
  it("proposes real edits of an Adam parent, never one that trains like it (AdamW without decay)", () => {
    const train = { optimizer: "adam" as const, lr: 2e-3, epochs: 3, subset: 10_000 };
    const parentModel = templatesFor(IMAGES)[0]!.build(IMAGES);
    const events: EventInit[] = [
      started({ parallel: 2 }, { dataset: "fashion-mnist" }),
      { runId: RUN, trialId: "t0", body: { case: "trialProposed", value: { surface: Surface.ARCHITECTURE, model: modelSpec(parentModel), train: trainSpec(train) } } },
      evaluated("t0", 0.88),
      { runId: RUN, trialId: "t0", body: { case: "trialJudged", value: { verdict: Verdict.ACCEPT, decision: Decision.ITERATE } } },
    ];
    const parent = fingerprint(parentModel, train);
    expect(fingerprint(parentModel, { ...train, optimizer: "adamw", weight_decay: 0 })).toBe(parent);
    const proposals = Array.from({ length: 24 }, (_, i) => {
      const s = state(events);
      return nextBuiltin({ state: s, info: IMAGES, rng: mulberry32(i), params: paramsCounter(s, IMAGES), failedElsewhere: new Set() }, 1 + i)!;
    });
    expect(proposals.every((p) => p !== undefined)).toBe(true);
    expect(proposals.map((p) => fingerprint(p.model, p.train))).not.toContain(parent);
    expect(proposals.some((p) => p.model.name.endsWith("+optimizer"))).toBe(true);
  });
});
