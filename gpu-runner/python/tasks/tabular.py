"""Tables: scikit-learn's iris, wine and breast cancer (classes) and diabetes (a number), and a
person's CSV (`csv:PATH target=COLUMN`), the task module `tabular` (core/tasks/tabular.ts is its
twin).

A CSV is a file, or a folder with train.csv and an optional test.csv; without a test file a
stratified 20% is held out as the test split, as for the scikit-learn sets. Its target column is
a class (classification) or a number in its own units (regression); every other column becomes
float32 features as fitted on the training rows (`_column_encoder`): numbers as they are, a
missing one the training median; other values one-hot, or ordinal past MAX_ONE_HOT_LEVELS levels.
"""
import math
import os

import numpy as np

from data_files import Raw, _carve_test, _encode_labels, _invalid, _read_csv, _sklearn, columns_text

MAX_ONE_HOT_LEVELS = 32

_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})


def _is_missing(value):
    return value.lower() in _MISSING


def _as_number(value):
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _column_encoder(values):
    """Fits on training values; returns a function from a column of strings to a 2-D float block."""
    present = [v for v in values if not _is_missing(v)]
    if not present:
        return None
    numbers = [_as_number(v) for v in present]
    if all(n is not None for n in numbers):
        median = float(np.median(numbers))

        def numeric(column):
            parsed = (_as_number(v) for v in column)
            return np.array([median if n is None else n for n in parsed], dtype=np.float32)[:, None]
        return numeric
    levels, counts = np.unique(present, return_counts=True)
    mode = levels[np.argmax(counts)]
    index = {level: i for i, level in enumerate(levels)}
    if len(levels) > MAX_ONE_HOT_LEVELS:
        def ordinal(column):
            return np.array([index.get(mode if _is_missing(v) else v, index[mode]) for v in column],
                            dtype=np.float32)[:, None]
        return ordinal

    def one_hot(column):
        block = np.zeros((len(column), len(levels)), dtype=np.float32)
        for row, v in enumerate(column):
            level = index.get(mode if _is_missing(v) else v)
            if level is not None:  # a level unseen in training stays all zeros
                block[row, level] = 1.0
        return block
    return one_hot


def _csv(spec):
    path = spec["data_dir"]
    test_path = None
    if os.path.isdir(path):
        test_path = os.path.join(path, "test.csv")
        test_path = test_path if os.path.isfile(test_path) else None
        path = os.path.join(path, "train.csv")
    if not os.path.isfile(path):
        raise _invalid(f"csv: {path or '(empty data_dir)'} is not a file "
                       "(set dataset.data_dir to a CSV file or a directory with train.csv and optional test.csv)")
    header, rows = _read_csv(path)
    target = spec["target_column"]
    if target not in header:
        raise _invalid(f"csv: target_column {target!r} is not a column of {path}; "
                       f"available columns: {columns_text(header)}")
    t = header.index(target)
    rows = [r for r in rows if not _is_missing(r[t])]
    # Before the test split is carved from them: there is nothing to carve from none.
    if not rows:
        raise _invalid(f"csv: {path} has no rows with a value in {target!r}")
    if test_path:
        test_header, test_rows = _read_csv(test_path)
        if test_header != header:
            raise _invalid(f"csv: {test_path} has columns {test_header}, expected those of {path}: {header}")
        test_rows = [r for r in test_rows if not _is_missing(r[t])]
    else:
        targets = [r[t] for r in rows]
        labels = _numeric_targets(targets, path, target) if spec["task"] == "regression" else \
            np.unique(targets, return_inverse=True)[1]
        _, _, test_idx, _ = _carve_test(np.arange(len(rows)), labels)
        held_out = set(test_idx.tolist())
        test_rows = [r for i, r in enumerate(rows) if i in held_out]
        rows = [r for i, r in enumerate(rows) if i not in held_out]
    if not rows:
        raise _invalid(f"csv: {path} has no rows with a value in {target!r}")

    if spec["task"] == "regression":
        y_train, names = _numeric_targets([r[t] for r in rows], path, target), []
        y_test = _numeric_targets([r[t] for r in test_rows], test_path or path, target)
    else:
        y_train, y_test, names = _encode_labels([r[t] for r in rows], [r[t] for r in test_rows], f"csv {path}")
    blocks_train, blocks_test = [], []
    for j in range(len(header)):
        if j == t:
            continue
        encoder = _column_encoder([r[j] for r in rows])
        if encoder is not None:
            blocks_train.append(encoder([r[j] for r in rows]))
            blocks_test.append(encoder([r[j] for r in test_rows]))
    if not blocks_train:
        raise _invalid(f"csv: {path} has no usable feature columns besides {target!r}")
    x_train = np.concatenate(blocks_train, axis=1)
    x_test = np.concatenate(blocks_test, axis=1) if test_rows else np.zeros((0, x_train.shape[1]), np.float32)
    if spec["task"] == "regression":
        return Raw("csv", x_train, y_train, x_test, y_test, names, task="regression")
    known = y_test >= 0
    return Raw("csv", x_train, y_train, x_test[known], y_test[known], names)


def _numeric_targets(values, path, target):
    numbers = [_as_number(v) for v in values]
    bad = next((v for v, n in zip(values, numbers) if n is None), None)
    if bad is not None:
        raise _invalid(f"csv: {path}: a regression target must be numeric, and {target!r} holds {bad!r}")
    return np.array(numbers, dtype=np.float64)


LOADERS = {
    "iris": _sklearn("load_iris"),
    "wine": _sklearn("load_wine"),
    "breast_cancer": _sklearn("load_breast_cancer"),
    "diabetes": _sklearn("load_diabetes", regression=True),
    "csv": _csv,
}
