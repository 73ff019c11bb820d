"""What every dataset shares: loading one by name, its validation split, and what
of it a sandboxed job may see. The loaders are the task registry's (tasks/, one
module per kind of data, built on data_files.py); this module names no dataset.
Local files only: nothing is ever downloaded.

Loaders run in the referee (referee.py, trusted, outside the sandbox): it
splits the data and publishes the inputs and split indices, never a label of
the validation or test split (see `publish`). The zygote loads the published
inputs (numpy only, so no thread pools start before a fork) and caches them:
forked jobs share the arrays copy-on-write and repeated jobs skip decoding.
Images stay uint8; conversion to float and standardisation happen per batch
in the job.

Every loader returns a Raw (data_files.py) with a train and a test split. Sets
that ship without a test split get a fixed 20% carved out with a seed that does
not depend on split_seed, so no choice made during search can ever reach it.
"""

import hashlib
import json
import math
import os
import pickle
import struct
from dataclasses import dataclass

import numpy as np

import learning
import tasks
from data_files import Raw, _invalid, _stratified_take
from failures import TaskFailure

# The proto enum Task by snake_case name (test/core/closed-sets.test.ts holds the two together).
TASKS = learning.NAMES

KNOWN = tuple(sorted(tasks.LOADERS))


@dataclass
class Split:
    """Index arrays into a Raw: train and val come from its train split, test from its test split."""
    raw: Raw
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def describe(self):
        raw = self.raw
        return {
            "kind": "dataset", "name": raw.name, "task": raw.task,
            "input_shape": learning.of(raw.task).input_shape(raw),
            "num_classes": len(raw.class_names), "class_names": list(raw.class_names),
            "input_dtype": raw.input_dtype, "vocab_size": raw.vocab_size,
            "n_train": int(len(self.train)), "n_val": int(len(self.val)), "n_test": int(len(self.test)),
        }


def cache_key(spec):
    """What determines a loader's output. Files are assumed not to change while a zygote lives."""
    generated = spec["name"] in tasks.GENERATED
    return (spec["name"], spec["task"], spec["data_dir"], spec["target_column"],
            tuple(spec["shape"]) if generated else (),
            spec["num_classes"] if generated else 0,
            spec["difficulty"] if generated else 0.0,
            spec["split_seed"] if generated else 0)


def load(spec):
    loader = tasks.LOADERS.get(spec["name"])
    if loader is None:
        raise _invalid(f"unknown dataset {spec['name']!r}; known: {', '.join(KNOWN)}")
    try:
        raw = loader(spec)
        if raw.task != spec["task"]:
            raise _invalid(f"{spec['name']} is a {raw.task} dataset, not {spec['task']}: "
                           + (learning.of(raw.task).asked_otherwise or learning.of(spec["task"]).needs))
        return raw
    except TaskFailure:
        raise
    # pickle's and struct's: what a CIFAR or an IDX file that is not one raises (tasks/images.py).
    except (OSError, ValueError, KeyError, EOFError, pickle.UnpicklingError, struct.error) as exc:
        where = spec["data_dir"] or "its default location"
        raise _invalid(f"{spec['name']}: could not read {where}: {type(exc).__name__}: {exc}") from exc


# With no fraction asked for, a tenth of the pool is held out, but at least 1,000 examples (up to
# 30% of the pool): the interval on validation accuracy counts the finite validation set, and on
# digits a tenth (143 examples) could not certify 97% even at 142/143 correct.
VAL_FRACTION = 0.1
VAL_MIN_EXAMPLES = 1000
VAL_MAX_FRACTION = 0.3


def val_count(n_pool, fraction, targets_per_example=1):
    """A language model's row holds hundreds of targets: the minimum counts targets, not rows."""
    if fraction:
        return max(1, int(round(n_pool * fraction)))
    minimum = math.ceil(VAL_MIN_EXAMPLES / targets_per_example)
    return max(1, int(round(max(VAL_FRACTION * n_pool, min(minimum, VAL_MAX_FRACTION * n_pool)))))


def split(raw, spec):
    """Stratified subset of the train split, then a stratified validation carve-out of it."""
    rng = np.random.default_rng(spec["split_seed"])
    pool = np.arange(len(raw.y_train))
    if 0 < spec["subset"] < len(pool):
        pool, _ = _stratified_take(raw.y_train, pool, spec["subset"], rng)
    n_val = val_count(len(pool), spec["val_fraction"], learning.of(raw.task).targets_per_example(raw))
    if n_val >= len(pool):
        raise _invalid(f"{spec['name']}: {len(pool)} training samples leave none for training after "
                       f"a validation fraction of {spec['val_fraction']:g}")
    val, train = _stratified_take(raw.y_train, pool, n_val, rng)
    test = np.arange(len(raw.y_test))
    if 0 < spec["test_subset"] < len(test):
        test, _ = _stratified_take(raw.y_test, test, spec["test_subset"],
                                   np.random.default_rng(spec["split_seed"]))
    return Split(raw, train, val, test)


# --- publishing: what a sandboxed job sees ----------------------------------------------------
#
# A model runs in the same process as its training loop, so whatever that process holds, the
# model can read. The referee therefore publishes, per dataset, the inputs of both splits
# (PUBLIC_ROOT/d-<id>/, mounted read-only in the sandbox) and, per split, its indices
# (PUBLIC_ROOT/s-<id>.npz); the training labels of one split go to a private file the runner
# hands to that split's jobs alone (an open file, like kept weights). A published split's label
# file holds -1 everywhere but its training indices, and no file the sandbox can see holds a
# validation or test label, so the referee alone can score predictions.

def dataset_id(spec):
    return hashlib.sha256(repr(cache_key(spec)).encode()).hexdigest()[:16]


def split_id(spec):
    key = (cache_key(spec), spec["subset"], spec["val_fraction"], spec["split_seed"], spec["test_subset"])
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def _write_atomically(path, write):
    """Another referee (a restarted one) may publish the same file: readers see all of it or none."""
    if os.path.exists(path):
        return
    partial = f"{path}.partial-{os.getpid()}"
    write(partial)
    os.replace(partial, path)


def _save_npy(array):
    def write(path):
        with open(path, "wb") as f:
            np.save(f, array, allow_pickle=False)
    return write


def publish(split, spec, public_root, private_root):
    """Writes what jobs of this split may see; returns the ids the jobs name it by and its labels' file."""
    raw = split.raw
    did, sid = dataset_id(spec), split_id(spec)
    folder = os.path.join(public_root, f"d-{did}")
    if not os.path.isdir(folder):
        partial = f"{folder}.partial-{os.getpid()}"
        os.makedirs(partial, exist_ok=True)
        _save_npy(raw.x_train)(os.path.join(partial, "x_train.npy"))
        _save_npy(raw.x_test)(os.path.join(partial, "x_test.npy"))
        with open(os.path.join(partial, "meta.json"), "w") as f:
            json.dump({"name": raw.name, "class_names": list(raw.class_names), "vocab_size": raw.vocab_size,
                       "task": raw.task}, f)
        try:
            os.rename(partial, folder)
        except OSError:  # published meanwhile by another referee
            if not os.path.isdir(folder):
                raise
    def write_split(path):
        with open(path, "wb") as f:
            np.savez(f, train=split.train, val=split.val, test=split.test)
    _write_atomically(os.path.join(public_root, f"s-{sid}.npz"), write_split)
    labels = np.full(len(raw.y_train), -1 if raw.y_train.dtype.kind == "i" else np.nan, dtype=raw.y_train.dtype)
    labels[split.train] = raw.y_train[split.train]
    labels_path = os.path.join(private_root, f"y-{sid}.npy")
    _write_atomically(labels_path, _save_npy(labels))
    return {"dataset_id": did, "split_id": sid, "labels": labels_path}


def load_published(public_root, did):
    folder = os.path.join(public_root, f"d-{did}")
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        x_train = np.load(os.path.join(folder, "x_train.npy"), allow_pickle=False)
        x_test = np.load(os.path.join(folder, "x_test.npy"), allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TaskFailure("crash", f"the published dataset {did} cannot be read: {exc}") from exc
    return Raw(meta["name"], x_train, None, x_test, None, meta["class_names"], meta["vocab_size"], meta["task"])


def published_split(raw, public_root, sid):
    try:
        with np.load(os.path.join(public_root, f"s-{sid}.npz"), allow_pickle=False) as f:
            return Split(raw, f["train"], f["val"], f["test"])
    except (OSError, ValueError, KeyError) as exc:
        raise TaskFailure("crash", f"the published split {sid} cannot be read: {exc}") from exc


def feature_stats(x, idx, chunk=4096):
    """Mean and std over x[idx] per channel (axis 1), shaped to broadcast against a batch.

    Accumulated in float64 over chunks so a large uint8 set never needs a float copy.
    """
    reduce_axes = (0,) + tuple(range(2, x.ndim))
    total = np.zeros(x.shape[1])
    squares = np.zeros(x.shape[1])
    for start in range(0, len(idx), chunk):
        part = x[idx[start:start + chunk]].astype(np.float64)
        total += part.sum(axis=reduce_axes)
        squares += np.square(part).sum(axis=reduce_axes)
    count = len(idx) * (x[0].size // x.shape[1])
    mean = total / count
    std = np.sqrt(np.maximum(squares / count - mean ** 2, 0.0))
    std[std < 1e-6] = 1.0
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    return mean.astype(np.float32).reshape(shape), std.astype(np.float32).reshape(shape)
