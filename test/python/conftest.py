"""Shared set-up for the tests of the runner's Python worker and the compiler's helper modules.

The worker's modules import each other by bare name (the zygote runs with its
own directory on sys.path), so the tests import them the same way.
"""

import atexit
import copy
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER_DIR = os.path.join(REPO, "gpu-runner", "python")
sys.path[:0] = [WORKER_DIR, os.path.join(REPO, "core", "compiler")]

# Two cores shared with the rest of the suite; tiny models gain nothing from more threads.
torch.set_num_threads(1)

# Seeds trained together (stack.Stack) need torch.func, from torch 2.0; under torch 1.x a job
# of several seeds answers "apart" (test_trainer.py checks that).
needs_torch_func = pytest.mark.skipif(not hasattr(torch, "func"), reason="torch 1.x has no torch.func: seeds train apart")

# Job specs are complete, as gpu-runner/request.ts sends them: the worker has no defaults.
# These values are neutral stand-ins for the fields a test does not care about.
_DATASET = {"name": "digits", "data_dir": "", "subset": 0, "val_fraction": 0.1, "split_seed": 0,
            "target_column": "", "shape": [], "num_classes": 0, "difficulty": 0.0, "test_subset": 0,
            "task": "classification"}
_FULL = {
    "train": {
        "source": "", "class_name": "Net", "init_kwargs": {}, "dataset": _DATASET,
        "recipe": {"optimizer": "adam", "lr": 1e-3, "momentum": 0.0, "nesterov": False, "weight_decay": 0.0,
                   "schedule": "none", "warmup_epochs": 0.0, "step_size": 1, "gamma": 0.1, "label_smoothing": 0.0,
                   "grad_clip": 0.0, "batch_size": 128, "epochs": 2, "amp": False, "channels_last": False, "deterministic": False, "ema_decay": 0.0, "swa": False, "tta_hflip": False, "train_seconds": 0.0, "context": 0,
                   "augment": {"hflip": False, "crop_padding": 0, "cutout": 0}},
        "seed": 0, "together": 1, "max_params": 0, "max_latency_ms": 0, "evaluate_test": False, "measure_inference": False, "weights": "", "init": False, "verdicts": False, "threads": 1,
    },
    "summarize": {"source": "", "class_name": "Net", "init_kwargs": {}, "input_shape": [1, 8, 8],
                  "input_dtype": "float32", "num_classes": 0, "task": "classification", "threads": 1},
    "prepare": {"dataset": _DATASET},
    "script": {"language": "python", "source": "", "timeout_s": 30.0, "files": {}},
}
_LIMITS = {"memory_mb": 4096, "cpu_seconds": 600.0, "wall_seconds": 300.0, "file_mb": 64, "nproc": 256, "gpu_memory_fraction": 0.0}


def _merge(base, fields):
    out = copy.deepcopy(base)
    for key, value in fields.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def full_spec(task, **fields):
    """A complete spec for task with `fields` merged in (objects key by key, anything else replaced)."""
    return _merge({**_FULL.get(task, {}), "limits": _LIMITS}, fields)


_REFEREE = []


def referee():
    """One referee for the session, publishing into a folder the jobs' uid can read."""
    if not _REFEREE:
        import referee as module
        root = tempfile.mkdtemp(prefix="referee-test-")
        os.chmod(root, 0o711)
        atexit.register(shutil.rmtree, root, True)
        _REFEREE.append(module.Referee(os.path.join(root, "published"), os.path.join(root, "labels")))
    return _REFEREE[0]


def published(spec):
    """A train spec as the runner sends it, the referee having published its split; and the split's labels file."""
    prepared = referee().prepare({"dataset": spec["dataset"]})
    return {**spec, "dataset_id": prepared["dataset_id"], "split_id": prepared["split_id"]}, prepared["labels"]


def scored(dataset, result, progress=()):
    """A train job's result as the runner reports it (gpu-runner/evaluator.ts): the referee's numbers
    in place of the predictions, and the validation curve from the epochs' predictions."""
    if result["kind"] != "result":
        return result
    if "seeds" in result:  # seeds trained together: each seed's result came before the job's end
        return {**result, "results": [scored(dataset, {**e, "kind": "result"}, [p for p in progress if p.get("seed") == e["seed"]])
                                      for e in progress if e["kind"] == "seed_result"]}
    out = {k: v for k, v in result.items() if not k.endswith("_predictions")}
    curve = [referee().score({"dataset": dataset, "part": "val", "predictions": [e["val_predictions"]]})
             for e in progress if e["kind"] == "epoch"]
    out["learning_curve"] = {**result["learning_curve"],
                             **{key: [c[key] for c in curve] for key in (curve[0] if curve else ()) if key.startswith("val_")}}
    out["metrics"] = dict(result["metrics"])
    for part in ("val", "test"):
        if f"{part}_predictions" in result:
            s = referee().score({"dataset": dataset, "part": part, "full": True,
                                 "predictions": [result[f"{part}_predictions"]]})
            out["metrics"].update(s["metrics"])
            out[f"{part}_examples"] = s["examples"]
            if part == "val" and "per_class" in s:
                out["per_class"], out["confusion_matrix"] = s["per_class"], s["confusion_matrix"]
    return out


@pytest.fixture(scope="session")
def fixtures_dir():
    """The files of test/fixtures/make_datasets.py, in the cache directory test/helpers/fixtures.ts uses."""
    script = os.path.join(REPO, "test", "fixtures", "make_datasets.py")
    with open(script, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"research-swarm-fixtures-{digest}")
    if not os.path.isdir(path):
        partial = f"{path}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([sys.executable, script, partial], check=True)
        try:
            os.rename(partial, path)
        except OSError:
            if not os.path.isdir(path):
                raise
            shutil.rmtree(partial)  # a concurrent run wrote the same bytes first
    return path
