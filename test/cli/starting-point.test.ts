/**
 * launch --from RUN/TRIAL of a trial whose code an LLM edited: its folder's code is the new run's
 * source as it is, so the model_config it starts from makes no edit and names no trial of the
 * earlier run to take code from.
 */
import { expect, it } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startingPointOf } from "../../cli/starting-point.js";
import { modelSent, trainSent } from "../../core/config-wire.js";

it("continues an edited trial from the code its folder keeps, with no edit left to make", () => {
  const ws = mkdtempSync(join(tmpdir(), "start-edited-"));
  const dir = join(ws, "runs", "r1", "experiments", "r1-t005");
  mkdirSync(dir, { recursive: true });
  const code = "import torch.nn as nn\n\nclass Net(nn.Module):\n    pass\n";
  writeFileSync(join(dir, "model_code.py"), code);
  writeFileSync(join(dir, "model_config.yaml"), "name: net\nclass_name: Net\ninit_kwargs:\n  width: 24\ncode_edit: add batch normalisation after the linear layer\nsource_trial: r1-t002\n");
  writeFileSync(join(dir, "train_config.yaml"), "optimizer: adam\nlr: 0.01\n");
  const start = startingPointOf({ from: "r1/t005" }, ws, "python3")!;
  expect(modelSent(start.point)).toEqual({ name: "net", class_name: "Net", init_kwargs: { width: 24 } });
  expect(start.point.modelCode).toBe(code);
  expect(trainSent(start.point)).toMatchObject({ optimizer: "adam", lr: 0.01 });
});
