"""A finished run's best model as one self-contained file, TorchScript or ONNX: its seeds' trained
weights (or one seed's), the standardisation it trained on and, where the run scored so, test-time
flip averaging, all inside; what it returns is the mean of the seeds' class probabilities (the
ensemble the report scores), or a regression's prediction in the target's units. It loads with
torch alone (torch.jit.load) or with any ONNX runtime (no torch), no code of the run's needed:

    python3 export_model.py RUN_DIR OUT_DIR [--seed N] [--format torchscript|onnx]

reads RUN_DIR/src/models (current_model.py, its weights, inference.json) and report.json (the
class's arguments and weight files), and writes OUT_DIR/model.torchscript.pt or OUT_DIR/model.onnx
and OUT_DIR/inference.json (the input it takes, its dtype, and the classes its outputs are in).
Prints one JSON line: what it wrote. Run by `research-agent export RUN --format FORMAT DIR`.
"""

import argparse
import importlib.util
import json
import os
import sys

import torch
import torch.nn as nn


# Each format's file in OUT_DIR.
FILES = {"torchscript": "model.torchscript.pt", "onnx": "model.onnx"}


class Exported(nn.Module):
    """Raw inputs in, the run's prediction out: standardised as in training, each seed's model,
    their probabilities (a regression: predictions) averaged."""

    def __init__(self, models, mean, std, flip, classify, target_mean, target_std):
        super().__init__()
        self.models = nn.ModuleList(models)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.flip = flip
        self.classify = classify
        self.target_mean = target_mean
        self.target_std = target_std

    def one(self, model, z):
        out = model(z).float()
        if self.flip:
            out = (out + model(z.flip(-1)).float()) / 2
        return torch.softmax(out, -1) if self.classify else out * self.target_std + self.target_mean

    def forward(self, x):
        z = (x.float() - self.mean) / self.std if self.mean.numel() else x
        return torch.stack([self.one(m, z) for m in self.models]).mean(0)


def load_spec(run_dir):
    """The run's inference spec and its best trial's weights as the report lists them."""
    with open(os.path.join(run_dir, "src", "models", "inference.json")) as f:
        spec = json.load(f)
    with open(os.path.join(run_dir, "report.json")) as f:
        weights = json.load(f)["outcome"]["best_trial"]["weights"]
    return spec, weights


def build(run_dir, seed=None):
    """The run's best model as an Exported module (every seed's, or `seed`'s), and its spec."""
    spec, weights = load_spec(run_dir)
    files = [w["path"] for w in weights["files"]]
    if seed is not None:
        files = [p for p in files if p.endswith(f"_seed-{seed}.pt")]
        if not files:
            sys.exit(f"export: no weights of seed {seed} in {run_dir}")
    load = importlib.util.spec_from_file_location("current_model", os.path.join(run_dir, "src", "models", "current_model.py"))
    module = importlib.util.module_from_spec(load)
    load.loader.exec_module(module)
    cls = getattr(module, spec["class_name"])
    models = []
    for path in files:
        model = cls(**weights["init_kwargs"])
        model.load_state_dict(torch.load(os.path.join(run_dir, path), map_location="cpu"))
        models.append(model.eval())
    shape = spec["input"]["shape"]
    stats = spec["input"]["standardise"]
    view = [1, -1] + [1] * (len(shape) - 1)
    mean = torch.tensor(stats["mean"]).view(view) if stats else torch.zeros(0)
    std = torch.tensor(stats["std"]).view(view) if stats else torch.ones(0)
    classify = "classes" in spec["output"]
    exported = Exported(models, mean, std, spec["test_time_flip_averaging"], classify,
                        0.0 if classify else spec["output"]["mean"], 1.0 if classify else spec["output"]["std"]).eval()
    return exported, spec, files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=None, help="one seed's model (default: the ensemble of every seed's)")
    ap.add_argument("--format", choices=FILES, default="torchscript")
    args = ap.parse_args()
    exported, spec, files = build(args.run_dir, args.seed)
    stats = spec["input"]["standardise"]
    classify = "classes" in spec["output"]
    # Token ids (no standardisation) go in as integers; everything else as the files' values.
    example = torch.zeros([2, *spec["input"]["shape"]], dtype=torch.float32 if stats else torch.long)
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, FILES[args.format])
    with torch.no_grad():
        if args.format == "onnx":
            # The TorchScript-based exporter: it needs the onnx package alone (the dynamo-based one
            # wants onnxscript too), and traces the same module the TorchScript file is. Opset 17:
            # what onnxruntime has run since 1.14. Any batch size.
            torch.onnx.export(exported, (example,), out, dynamo=False, opset_version=17, input_names=["input"],
                              output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        else:
            torch.jit.trace(exported, example).save(out)
    described = {"input": {**spec["input"], "dtype": str(example.dtype).removeprefix("torch.")}, "output": {**spec["output"], "returns": "class probabilities, the mean over its seeds" if classify
                                                   else "the prediction in the target's units, the mean over its seeds"},
                 "seeds": [os.path.basename(p) for p in files], "test_time_flip_averaging": spec["test_time_flip_averaging"]}
    with open(os.path.join(args.out_dir, "inference.json"), "w") as f:
        json.dump(described, f, indent=2)
    print(json.dumps({"model": out, "seeds": len(files), "inference": os.path.join(args.out_dir, "inference.json")}))


if __name__ == "__main__":
    main()
