"""A finished run's best model, self-contained, as TorchScript, ONNX or Python: its seeds' trained
weights (or one seed's), the standardisation it trained on and, where the run scored so, test-time
flip averaging, all inside; what it returns is the mean of the seeds' class probabilities (the
ensemble the report scores), or a regression's prediction in the target's units. TorchScript loads
with torch alone (torch.jit.load), ONNX with any ONNX runtime (no torch), Python as a plain
nn.Module to read, change or fine-tune (model.py: the run's class, then `load()`); no code of the
run's folder needed:

    python3 export_model.py RUN_DIR OUT_DIR [--seed N] [--format torchscript|onnx|python]

reads RUN_DIR/src/models (current_model.py, its weights, inference.json) and report.json (the
class's arguments and weight files), and writes OUT_DIR/model.torchscript.pt, OUT_DIR/model.onnx
or OUT_DIR/model.py with the weight files, and OUT_DIR/inference.json (the input it takes, its
dtype, and the classes its outputs are in). Prints one JSON line: what it wrote. Run by
`research-agent export RUN --format FORMAT DIR`.
"""

import argparse
import importlib.util
import inspect
import json
import os
import shutil
import sys

import torch
import torch.nn as nn


# Each format's file in OUT_DIR.
FILES = {"torchscript": "model.torchscript.pt", "onnx": "model.onnx", "python": "model.py"}


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


def assemble(cls, init_kwargs, weight_files, spec):
    """An Exported module of `cls` with each of `weight_files` (a seed's state dict), fed as `spec` says."""
    models = []
    for path in weight_files:
        model = cls(**init_kwargs)
        model.load_state_dict(torch.load(path, map_location="cpu"))
        models.append(model.eval())
    shape = spec["input"]["shape"]
    stats = spec["input"]["standardise"]
    view = [1, -1] + [1] * (len(shape) - 1)
    mean = torch.tensor(stats["mean"]).view(view) if stats else torch.zeros(0)
    std = torch.tensor(stats["std"]).view(view) if stats else torch.ones(0)
    # A language model's output is a classifier's at every position: softmax over the last axis.
    classify = "classes" in spec["output"] or spec["output"].get("per_position", False)
    return Exported(models, mean, std, spec["test_time_flip_averaging"], classify,
                    0.0 if classify else spec["output"]["mean"], 1.0 if classify else spec["output"]["std"]).eval()


def build(run_dir, seed=None):
    """The run's best model as an Exported module (every seed's, or `seed`'s), its spec, the class's
    arguments and the weight files (paths in the run folder)."""
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
    exported = assemble(cls, weights["init_kwargs"], [os.path.join(run_dir, p) for p in files], spec)
    return exported, spec, weights["init_kwargs"], files


# What model.py adds to the run's own source (--format python): the preprocessing and the ensemble
# as export_model.py has them (their source, copied), and a load() of the files beside it.
PYTHON_TAIL = """

# ---- Written by `research-agent export --format python`: the model as the run fed it. ----
import json as _json
import os as _os

import torch
import torch.nn as nn

_HERE = _os.path.dirname(_os.path.abspath(__file__))


{exported}

{assemble}

def load(seed=None):
    \"\"\"The run's best model, raw inputs in: the ensemble of its seeds (or `seed`'s model), each a
    {class_name} with its trained weights, standardised and averaged as the run scored it. A
    plain nn.Module: fine-tune it, or take one of `.models`.\"\"\"
    with open(_os.path.join(_HERE, "inference.json")) as f:
        spec = _json.load(f)
    files = [p for p in spec["seeds"] if seed is None or p.endswith(f"_seed-{{seed}}.pt")]
    if not files:
        raise ValueError(f"no weights of seed {{seed}}: {{spec['seeds']}}")
    return assemble({class_name}, spec["init_kwargs"], [_os.path.join(_HERE, p) for p in files], spec)
"""


def write_python(run_dir, out_dir, spec, init_kwargs, files):
    """OUT_DIR/model.py (the run's class, then PYTHON_TAIL) and the weight files beside it."""
    with open(os.path.join(run_dir, "src", "models", "current_model.py")) as f:
        source = f.read()
    tail = PYTHON_TAIL.format(exported=inspect.getsource(Exported), assemble=inspect.getsource(assemble), class_name=spec["class_name"])
    out = os.path.join(out_dir, FILES["python"])
    with open(out, "w") as f:
        f.write(source.rstrip() + "\n" + tail)
    for p in files:
        shutil.copyfile(os.path.join(run_dir, p), os.path.join(out_dir, os.path.basename(p)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=None, help="one seed's model (default: the ensemble of every seed's)")
    ap.add_argument("--format", choices=FILES, default="torchscript")
    args = ap.parse_args()
    exported, spec, init_kwargs, files = build(args.run_dir, args.seed)
    stats = spec["input"]["standardise"]
    output = spec["output"]
    returns = ("at every position, the next byte's probabilities, the mean over its seeds" if output.get("per_position")
               else "class probabilities, the mean over its seeds" if "classes" in output
               else "the prediction in the target's units, the mean over its seeds")
    # Token ids (no standardisation) go in as integers; everything else as the files' values.
    example = torch.zeros([2, *spec["input"]["shape"]], dtype=torch.float32 if stats else torch.long)
    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, FILES[args.format])
    with torch.no_grad():
        if args.format == "python":
            write_python(args.run_dir, args.out_dir, spec, init_kwargs, files)
        elif args.format == "onnx":
            # The TorchScript-based exporter: it needs the onnx package alone (the dynamo-based one
            # wants onnxscript too), and traces the same module the TorchScript file is. Opset 17:
            # what onnxruntime has run since 1.14. Any batch size. Attention's fused inference
            # kernel (nn.MultiheadAttention's fast path) has no ONNX form: traced as plain ops.
            if hasattr(torch.backends, "mha"):
                torch.backends.mha.set_fastpath_enabled(False)
            torch.onnx.export(exported, (example,), out, dynamo=False, opset_version=17, input_names=["input"],
                              output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        else:
            torch.jit.trace(exported, example).save(out)
    described = {"input": {**spec["input"], "dtype": str(example.dtype).removeprefix("torch.")}, "output": {**output, "returns": returns},
                 "seeds": [os.path.basename(p) for p in files], "test_time_flip_averaging": spec["test_time_flip_averaging"],
                 **({"class_name": spec["class_name"], "init_kwargs": init_kwargs} if args.format == "python" else {})}
    with open(os.path.join(args.out_dir, "inference.json"), "w") as f:
        json.dump(described, f, indent=2)
    print(json.dumps({"model": out, "seeds": len(files), "inference": os.path.join(args.out_dir, "inference.json")}))


if __name__ == "__main__":
    main()
