"""The data as the swarm's runner sees it, for the peers that run beside a search
(bench/optuna_baseline.py, bench/handwritten_resnet9.py): the runner's own loader and split
(gpu-runner/python/datasets.py, imported), with its defaults for a goal (split_seed 0, its
default validation carve-out: 6,000 of Fashion-MNIST's 60,000, 431 of the digits' 1,437), as
tensors on one device, standardised as the runner's trainer does. Fashion-MNIST by default (its
official 10k test set); any dataset the runner loads by name: the digits (scikit-learn's 8x8,
their fixed 20% test carve-out), a signal folder (bench/signals.py)."""

import json
import math
import os
import sys
import warnings

import numpy as np
import torch

RUNNER_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu-runner", "python")
sys.path.insert(0, RUNNER_PY)
import datasets  # noqa: E402  (the runner's loader and split)

# The runner's spec for a goal: gpu-runner/request.ts fills val_fraction 0 (datasets.val_count's
# default: a tenth of the pool, at least 1,000 examples up to 30% of it; for Fashion-MNIST the same
# 6,000 as a fraction of 0.1) and split_seed 0; subset 0 gives the full-data split every trial
# validates on.
SPEC = {"name": "fashion-mnist", "data_dir": "", "subset": 0, "val_fraction": 0.0, "split_seed": 0,
        "test_subset": 0, "target_column": "", "shape": [], "num_classes": 0, "difficulty": 0.0,
        "task": "classification"}


class Data:
    """The runner's arrays and split indices as tensors on `device` (all of it fits a GPU: 47 MB for
    Fashion-MNIST). `target`: a file dataset's class column (a signal CSV's)."""

    def __init__(self, device, data_dir="", name="fashion-mnist", target=""):
        spec = {**SPEC, "name": name, "data_dir": data_dir, "target_column": target}
        with warnings.catch_warnings():
            # The runner's arrays are read-only numpy views; nothing here writes to them.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            raw = datasets.load(spec)
            split = datasets.split(raw, spec)
            self.split = split
            on = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
            self.x_train = on(raw.x_train)
            self.y_train = on(raw.y_train)
            self.x_test = on(raw.x_test)
            self.y_test = on(raw.y_test)
            self.train = on(split.train)
            self.val = on(split.val)
            self.test = on(split.test)
            mean, std = datasets.feature_stats(raw.x_train, split.train)
        self.shape = tuple(raw.x_train.shape[1:])  # [channels, height, width] or a signal's [length, channels]
        self.num_classes = len(raw.class_names)
        self.mean, self.std = on(mean), on(std)
        self.device = device
        self._subsets = {}

    def inputs(self, x):
        return (x.float() - self.mean) / self.std

    def train_indices(self, subset):
        """A stratified slice of `subset` training examples (0 or more than there are: all of them)."""
        if not 0 < subset < len(self.train):
            return self.train
        if subset not in self._subsets:
            idx, _ = datasets._stratified_take(self.split.raw.y_train, self.split.train, subset,
                                               np.random.default_rng(subset))
            self._subsets[subset] = torch.from_numpy(idx).to(self.device)
        return self._subsets[subset]


def binomial_ci95(accuracy, n):
    """One model's accuracy on n examples: the binomial sampling error only."""
    half = 1.959964 * math.sqrt(accuracy * (1 - accuracy) / n)
    return [accuracy - half, accuracy + half]


def write_result(path, result, long_keys):
    """A peer's result: the whole of it as one JSON line in `path`, and without its long lists
    (`long_keys`) on stdout."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in long_keys}), flush=True)
