"""Validation of job specs, in the zygote before anything is forked.

The TypeScript side fills every field, but a spec can still carry nonsense
(a planner's invented optimizer, a negative batch size): such a job must end
as invalid_config with a message naming the field, never as a crash inside
training. Unknown fields are ignored. Missing fields are invalid too: the
defaults live on the TypeScript side (gpu-runner/request.ts, core/defaults.ts),
which sends every field, so a second set here could only disagree with them.
"""

import json
import math
import os
import re

from datasets import KNOWN, TASKS
from failures import TaskFailure
from tasks.text import TEXT_VOCAB

# The proto enums Optimizer, Schedule and ScriptLanguage, by their snake_case names in
# declaration order. The worker has no protobuf runtime, so they are copied here;
# test/core/closed-sets.test.ts fails when a copy and the proto drift apart.
OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("none", "step", "cosine", "onecycle")
SCRIPT_LANGUAGES = ("python", "bash")
# What happens to a trained model's weights: nothing, kept for a later test evaluation
# (the zygote hands the child a file to write), or loaded instead of training.
WEIGHTS = ("", "keep", "load")
# The most seeds one job trains together (gpu-runner/request.ts DEFAULTS.maxTogether).
MAX_TOGETHER = 8
# core/model-config.ts InputDtypeSchema (the wire carries sample dtypes as strings).
INPUT_DTYPES = ("float32", "int64")


def _one_of(names):
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _invalid(message):
    return TaskFailure("invalid_config", message)


def _get(obj, key, where):
    if key not in obj:
        raise _invalid(f"{where}.{key} is missing")
    return obj[key]


def _value(obj, key, kind, where, check=None, expect=""):
    value = _get(obj, key, where)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)) \
            or (kind is float and not math.isfinite(value)):
        raise _invalid(f"{where}.{key} must be {'a finite number' if kind is float else kind.__name__}, "
                       f"got {value!r}")
    if check is not None and not check(value):
        raise _invalid(f"{where}.{key} = {value!r}: expected {expect}")
    return value


def _object(obj, key, where):
    value = _get(obj, key, where)
    if not isinstance(value, dict):
        raise _invalid(f"{where}.{key} must be an object, got {value!r}")
    return value


def _int_list(obj, key, where, allow_empty):
    value = _get(obj, key, where)
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                              for v in value) or (not value and not allow_empty):
        raise _invalid(f"{where}.{key} must be a {'' if allow_empty else 'non-empty '}list of positive "
                       f"integers, got {value!r}")
    return list(value)


def limits(spec):
    raw = _object(spec, "limits", "spec")
    positive = (lambda v: v > 0, "> 0")
    return {
        "memory_mb": _value(raw, "memory_mb", int, "limits", lambda v: v >= 64, ">= 64"),
        "cpu_seconds": _value(raw, "cpu_seconds", float, "limits", *positive),
        "wall_seconds": _value(raw, "wall_seconds", float, "limits", *positive),
        "file_mb": _value(raw, "file_mb", int, "limits", lambda v: v >= 1, ">= 1"),
        "nproc": _value(raw, "nproc", int, "limits", lambda v: v >= 1, ">= 1"),
        "gpu_memory_fraction": _value(raw, "gpu_memory_fraction", float, "limits", lambda v: 0 <= v <= 1, "in [0, 1]"),
    }


def dataset(spec):
    raw = _object(spec, "dataset", "spec")
    where = "dataset"
    out = {
        "name": _value(raw, "name", str, where, lambda v: v in KNOWN, f"one of {', '.join(KNOWN)}"),
        "task": _value(raw, "task", str, where, lambda v: v in TASKS, _one_of(TASKS)),
        "data_dir": _value(raw, "data_dir", str, where),
        "subset": _value(raw, "subset", int, where, lambda v: v >= 0, ">= 0"),
        "val_fraction": _value(raw, "val_fraction", float, where, lambda v: 0 <= v < 1, "in [0, 1) (0: the default)"),
        "split_seed": _value(raw, "split_seed", int, where, lambda v: v >= 0, ">= 0"),
        "target_column": _value(raw, "target_column", str, where),
        "shape": _int_list(raw, "shape", where, allow_empty=True),
        "num_classes": _value(raw, "num_classes", int, where, lambda v: v >= 0, ">= 0"),
        "difficulty": _value(raw, "difficulty", float, where, lambda v: 0 <= v <= 1, "in [0, 1]"),
        "test_subset": _value(raw, "test_subset", int, where, lambda v: v >= 0, ">= 0"),
    }
    if out["name"] == "csv" and not out["target_column"]:
        raise _invalid("dataset.target_column is required for the csv dataset")
    if out["name"] == "synthetic":
        if not 1 <= len(out["shape"]) <= 3 or math.prod(out["shape"]) > 1 << 20:
            raise _invalid(f"dataset.shape = {out['shape']}: synthetic data needs 1 to 3 dimensions "
                           "and at most 2^20 values per sample, e.g. [20] or [1, 8, 8]")
        if not 2 <= out["num_classes"] <= 1000:
            raise _invalid(f"dataset.num_classes = {out['num_classes']}: synthetic data needs 2 to 1000 classes")
    return out


def _model(spec, out):
    out["source"] = _value(spec, "source", str, "spec", lambda v: v.strip() != "", "Python source")
    out["class_name"] = _value(spec, "class_name", str, "spec", str.isidentifier, "a Python identifier")
    out["init_kwargs"] = _object(spec, "init_kwargs", "spec")


# The recipe's fields, types and bounds: JSON Schema written from the TypeScript train_config
# schema (core/recipe.ts, scripts/gen-recipe-schema.ts), so the two sides cannot disagree.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe_schema.json"), encoding="utf-8") as _f:
    RECIPE_SCHEMA = json.load(_f)
_KINDS = {"number": float, "integer": int, "boolean": bool, "string": str}


def bounds_text(field):
    """How a field's bounds read in a message, worded as core/recipe.ts boundsText words them."""
    if "enum" in field:
        return _one_of(field["enum"])
    lo = field.get("exclusiveMinimum", field.get("minimum"))
    hi = field.get("exclusiveMaximum", field.get("maximum"))
    opening = "(" if "exclusiveMinimum" in field else "["
    closing = ")" if "exclusiveMaximum" in field else "]"
    if lo is not None and hi is not None:
        return f"in {opening}{lo:g}, {hi:g}{closing}"
    if lo is not None:
        return f"{'>' if opening == '(' else '>='} {lo:g}"
    return f"{'<' if closing == ')' else '<='} {hi:g}" if hi is not None else ""


def _within(field, v):
    return (v > field.get("exclusiveMinimum", -math.inf) and v >= field.get("minimum", -math.inf)
            and v < field.get("exclusiveMaximum", math.inf) and v <= field.get("maximum", math.inf))


def _by_schema(raw, schema, where):
    out = {}
    for key, field in schema["properties"].items():
        if field["type"] == "object":
            out[key] = _by_schema(_object(raw, key, where), field, f"{where}.{key}")
            continue
        if "enum" in field:
            check = lambda v, f=field: v in f["enum"]  # noqa: E731
        elif field["type"] in ("number", "integer"):
            check = lambda v, f=field: _within(f, v)  # noqa: E731
        else:
            check = None
        out[key] = _value(raw, key, _KINDS[field["type"]], where, check, bounds_text(field))
    return out


def _recipe(spec):
    out = _by_schema(_object(spec, "recipe", "spec"), RECIPE_SCHEMA, "recipe")
    # The schema's rules across fields (core/model-config.ts TrainConfigSchema's refinements).
    if out["optimizer"] == "sgd" and out["nesterov"] and out["momentum"] == 0:
        raise _invalid("recipe.nesterov needs recipe.momentum > 0")
    if out["swa"] and out["ema_decay"]:
        raise _invalid("recipe.swa and recipe.ema_decay are two weight averages: one at a time")
    if out["warmup_epochs"] and out["warmup_epochs"] >= out["epochs"]:
        raise _invalid(f"recipe.warmup_epochs = {out['warmup_epochs']} must be below recipe.epochs = {out['epochs']}")
    return out


def _relative_path(path):
    parts = path.split("/")
    return "\0" not in path and all(part not in ("", ".", "..") for part in parts)


def _script_files(spec):
    files = _object(spec, "files", "spec")
    for path, text in files.items():
        if not _relative_path(path):
            raise _invalid(f"spec.files: {path!r} is not a relative path inside the working directory")
        if not isinstance(text, str):
            raise _invalid(f"spec.files[{path!r}] must be text, got {type(text).__name__}")
    return files


def validate(task, spec):
    """A normalised copy of spec for task, or TaskFailure(invalid_config)."""
    if not isinstance(spec, dict):
        raise _invalid(f"spec must be an object, got {spec!r}")
    out = {"limits": limits(spec)}
    if task == "train":
        _model(spec, out)
        out["dataset"] = dataset(spec)
        # The split the referee published for this job (datasets.publish).
        for key in ("dataset_id", "split_id"):
            out[key] = _value(spec, key, str, "spec", lambda v: re.fullmatch(r"[0-9a-f]{16}", v), "a published id")
        out["recipe"] = _recipe(spec)
        out["seed"] = _value(spec, "seed", int, "spec", lambda v: 0 <= v < 2 ** 32, "in [0, 2^32)")
        # Seeds seed .. seed + together - 1 trained in this one job (stack.Stack).
        out["together"] = _value(spec, "together", int, "spec", lambda v: 1 <= v <= MAX_TOGETHER and out["seed"] + v <= 2 ** 32,
                                 f"in [1, {MAX_TOGETHER}], its seeds below 2^32")
        out["max_params"] = _value(spec, "max_params", int, "spec", lambda v: v >= 0, ">= 0")
        out["max_latency_ms"] = _value(spec, "max_latency_ms", float, "spec", lambda v: v >= 0, ">= 0")
        out["evaluate_test"] = _value(spec, "evaluate_test", bool, "spec")
        out["measure_inference"] = _value(spec, "measure_inference", bool, "spec")
        out["weights"] = _value(spec, "weights", str, "spec", lambda v: v in WEIGHTS, _one_of(WEIGHTS))
        out["threads"] = _value(spec, "threads", int, "spec", lambda v: 1 <= v <= 256, "in [1, 256]")
        # Each seed starts from a file of weights the zygote opens (EvaluateRequest.init_weights).
        out["init"] = _value(spec, "init", bool, "spec")
        # The runner answers each scored epoch (zygote "verdict", trainer._BestEpoch).
        out["verdicts"] = _value(spec, "verdicts", bool, "spec")
        if out["together"] > 1 and out["weights"] == "load":
            raise _invalid("spec.together: loaded weights are evaluated one seed a job")
        if out["init"] and out["weights"] == "load":
            raise _invalid("spec.init: loaded weights are evaluated, not trained from")
    elif task == "summarize":
        _model(spec, out)
        out["input_shape"] = _int_list(spec, "input_shape", "spec", allow_empty=False)
        out["input_dtype"] = _value(spec, "input_dtype", str, "spec", lambda v: v in INPUT_DTYPES,
                                    _one_of(INPUT_DTYPES))
        out["num_classes"] = _value(spec, "num_classes", int, "spec", lambda v: v >= 0, ">= 0")
        out["task"] = _value(spec, "task", str, "spec", lambda v: v in TASKS, _one_of(TASKS))
        # The one default: the TypeScript side never knows the text loader's hashing vocabulary.
        out["vocab_size"] = _value({"vocab_size": TEXT_VOCAB, **spec}, "vocab_size", int, "spec", lambda v: v >= 2, ">= 2")
        out["threads"] = _value(spec, "threads", int, "spec", lambda v: 1 <= v <= 256, "in [1, 256]")
    elif task == "script":
        out["language"] = _value(spec, "language", str, "spec", lambda v: v in SCRIPT_LANGUAGES,
                                  _one_of(SCRIPT_LANGUAGES))
        out["source"] = _value(spec, "source", str, "spec", lambda v: v.strip() != "", "a script")
        out["timeout_s"] = _value(spec, "timeout_s", float, "spec", lambda v: 0 < v <= 120, "in (0, 120]")
        out["files"] = _script_files(spec)
    else:
        raise _invalid(f"unknown task {task!r}; expected train, summarize or script")
    return out
