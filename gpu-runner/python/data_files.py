"""What the dataset loaders of the task registry (tasks/) share, and datasets.py with them: the Raw
a loader returns, the one-line refusal of a person's files, the readers of files more than one kind
of data comes in (a CSV with a header, a file among candidates, scikit-learn's bundled sets), class
labels from strings, and the stratified carve-outs (the fixed test split here, the validation split
in datasets.py).

This module imports nothing of tasks/, so a task module imports it at its top while datasets.py
imports the registry.
"""

import csv
import math
import os
from dataclasses import dataclass

import numpy as np

import learning
from failures import TaskFailure

# Sets that ship without a test split get a fixed 20% carved out with a seed that does not depend
# on split_seed, so no choice made during search can ever reach it.
_TEST_FRACTION = 0.2
_TEST_SEED = 20240611


def _invalid(message):
    return TaskFailure("invalid_config", message)


def columns_text(header, limit=None):
    """A file's column names for a one-line message: a name with a line break or other control
    character in it (a quote left open spans lines) is shown quoted and escaped."""
    shown = [repr(c) if any(ord(ch) < 32 for ch in c) else c for c in header[:limit]]
    return ", ".join(shown) + (" ..." if limit is not None and len(header) > limit else "")


@dataclass
class Raw:
    """A dataset as a loader returns it; a published one (`load_published`) has no labels (None).

    Classification: y holds class indices (int64) into class_names. Regression: y holds the
    numeric targets (float64) in their own units, and class_names is empty. Language modelling:
    x holds rows of bytes (uint8), y is all zeros (the targets are the next bytes of x), and
    vocab_size is LM_VOCAB (tasks/text.py).
    """
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    class_names: list
    vocab_size: int = 0
    task: str = "classification"

    @property
    def input_dtype(self):
        return "int64" if self.vocab_size else "float32"

    @property
    def prediction_width(self):
        """Numbers a job predicts per example: a probability per class, one value, or per position the
        log-probability of the byte that comes next."""
        return learning.of(self.task).prediction_width(self)

    @property
    def nbytes(self):
        return sum(a.nbytes for a in (self.x_train, self.y_train, self.x_test, self.y_test) if a is not None)


# --- stratified carve-outs --------------------------------------------------------------

# Numeric targets are stratified by the bins of their deciles, so a validation or test carve-out
# spans the range of the target as a classification one spans the classes.
_TARGET_BINS = 10


def _strata(y):
    if y.dtype.kind != "f":
        return y
    edges = np.unique(np.quantile(y, np.linspace(0, 1, _TARGET_BINS + 1)[1:-1]))
    return np.searchsorted(edges, y, side="right")


def _stratified_take(y, idx, n, rng):
    """Split idx into (n stratified by y, the rest), per-class counts by largest remainder."""
    classes, inverse = np.unique(_strata(y[idx]), return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    exact = counts * (n / len(idx))
    alloc = np.floor(exact).astype(np.int64)
    # Random tie-breaking, so tiny splits of balanced classes do not always favour class 0.
    order = np.lexsort((rng.random(len(classes)), -(exact - alloc)))
    alloc[order[:n - alloc.sum()]] += 1
    taken, rest = [], []
    for c in range(len(classes)):
        members = rng.permutation(idx[inverse == c])
        taken.append(members[:alloc[c]])
        rest.append(members[alloc[c]:])
    return np.sort(np.concatenate(taken)), np.sort(np.concatenate(rest))


def _carve_test(x, y):
    n_test = int(round(len(y) * _TEST_FRACTION))
    test, train = _stratified_take(y, np.arange(len(y)), n_test, np.random.default_rng(_TEST_SEED))
    return x[train], y[train], x[test], y[test]


# --- files ------------------------------------------------------------------------------

def _find(directory, candidates, dataset, what):
    for candidate in candidates:
        path = os.path.join(directory, candidate)
        if os.path.isfile(path):
            return path
    raise _invalid(f"{dataset}: no {' or '.join(candidates)} in {directory} (expected {what})")


def _read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        sample = f.read(1 << 16)
        f.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        reader = csv.reader(f, dialect)
        header = next(reader, None)
        if not header:
            raise _invalid(f"{path}: empty file, expected a header row")
        header = [h.strip() for h in header]
        rows = []
        for line, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise _invalid(f"{path}: line {line} has {len(row)} fields, the header has {len(header)}")
            rows.append([cell.strip() for cell in row])
    return header, rows


# --- scikit-learn's bundled toys ------------------------------------------------------

def _sklearn(loader, images=False, regression=False):
    def load_toy(spec):
        # Imported here, by the referee: scikit-learn costs every zygote (a runner slot) 1.5 s of
        # CPU at start, and no zygote loads a dataset.
        from sklearn import datasets as sklearn_datasets

        bunch = getattr(sklearn_datasets, loader)()
        x = bunch.images[:, None].astype(np.uint8) if images else bunch.data.astype(np.float32)
        if regression:
            return Raw(spec["name"], *_carve_test(x, bunch.target.astype(np.float64)), [], task="regression")
        names = [str(n) for n in bunch.target_names]
        return Raw(spec["name"], *_carve_test(x, bunch.target.astype(np.int64)), names)
    return load_toy


# --- class labels from strings (csv, text, signal) ------------------------------------

def _encode_labels(train_labels, test_labels, where):
    """Class indices for string labels; numbers sort numerically, anything else lexically.

    Test rows whose label never occurs in training get -1, for the caller to drop.
    """
    try:
        values = {label: float(label) for label in set(train_labels)}
    except ValueError:
        values = None
    if values is not None:
        if not all(math.isfinite(v) and v == int(v) for v in values.values()):
            raise _invalid(f"{where}: the target looks continuous, not a class; "
                           "for regression, name a regression metric in the goal (rmse, mae or r2)")
        ordered = sorted(values, key=values.get)
        names = [str(int(values[label])) for label in ordered]
        code = {label: i for i, label in enumerate(ordered)}
        numeric_code = {int(values[label]): i for i, label in enumerate(ordered)}

        def lookup(label):
            try:
                return code.get(label, numeric_code.get(int(float(label)), -1))
            except (ValueError, OverflowError):
                return -1
    else:
        names = sorted(set(train_labels))
        code = {label: i for i, label in enumerate(names)}

        def lookup(label):
            return code.get(label, -1)
    if len(names) < 2:
        raise _invalid(f"{where}: the target has {len(names)} class(es); at least 2 are needed")
    return (np.array([code[label] for label in train_labels], dtype=np.int64),
            np.array([lookup(label) for label in test_labels], dtype=np.int64), names)
