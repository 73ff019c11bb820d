"""1-D signals: sensor-style sequences, one class per sequence (the task `signal:PATH`).

PATH is either
- a CSV file (or a folder with train.csv and an optional test.csv): the target column is the class
  and every other column a step of the sequence, in order (one channel);
- a folder of .npy arrays: x.npy, shaped (N, length) or (N, length, channels), and y.npy (N,) of
  class labels, with x_test.npy and y_test.npy as its test split when it has one.

Without a test file a stratified 20% is held out as the test split, as for a CSV. Inputs come as
float32 [length, channels], the layout the conv1d and gru layers read; standardisation happens per
batch with the training split's statistics, as for every float dataset.
"""
import os

import numpy as np

from data_files import Raw, _carve_test, _encode_labels, _invalid, _read_csv, columns_text


def _csv(path, target):
    test_path = None
    if os.path.isdir(path):
        test_path = os.path.join(path, "test.csv")
        test_path = test_path if os.path.isfile(test_path) else None
        path = os.path.join(path, "train.csv")
    header, rows = _read_csv(path)
    if target not in header:
        raise _invalid(f"signal: target_column {target!r} is not a column of {path}; "
                       f"available columns: {columns_text(header, 8)}")
    if len(header) < 2:
        raise _invalid(f"signal: {path} has no sequence columns besides {target!r}")
    t = header.index(target)

    def parse(rows, where):
        if not rows:
            raise _invalid(f"signal: {where} has a header and no sequences")
        try:
            x = np.array([[float(v) for j, v in enumerate(r) if j != t] for r in rows], dtype=np.float32)
        except ValueError as exc:
            raise _invalid(f"signal: {where}: every column but {target!r} must be a number: {exc}") from exc
        if not np.isfinite(x).all():
            raise _invalid(f"signal: {where}: a sequence holds a value that is not finite")
        return x[:, :, None], [r[t] for r in rows]

    x, labels = parse(rows, path)
    test = parse(_read_csv(test_path)[1], test_path) if test_path else None
    return x, labels, test


def _npy(folder):
    def read(name, required=True):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            if required:
                raise _invalid(f"signal: {folder} has no {name} (a folder of .npy arrays holds x.npy "
                               "(N, length[, channels]) and y.npy (N,), and optionally x_test.npy and y_test.npy)")
            return None
        return np.load(path, allow_pickle=False)

    def inputs(x, name):
        if x.ndim not in (2, 3) or x.dtype.kind not in "fiu":
            raise _invalid(f"signal: {name} must be numbers shaped (N, length) or (N, length, channels), "
                           f"got {x.dtype} {tuple(x.shape)}")
        x = x.astype(np.float32)
        return x[:, :, None] if x.ndim == 2 else x

    x, y = inputs(read("x.npy"), "x.npy"), read("y.npy")
    if len(y) != len(x):
        raise _invalid(f"signal: y.npy has {len(y)} labels for {len(x)} sequences in x.npy")
    x_test, y_test = read("x_test.npy", False), read("y_test.npy", False)
    if (x_test is None) != (y_test is None):
        raise _invalid("signal: x_test.npy and y_test.npy come together")
    test = (inputs(x_test, "x_test.npy"), [str(v) for v in y_test]) if x_test is not None else None
    if test and test[0].shape[1:] != x.shape[1:]:
        raise _invalid(f"signal: x_test.npy's sequences are {test[0].shape[1:]}, x.npy's {x.shape[1:]}")
    return x, [str(v) for v in y], test


def load(spec):
    path = spec["data_dir"]
    npy = os.path.isdir(path) and os.path.isfile(os.path.join(path, "x.npy"))
    if not npy and not (os.path.isfile(path) or os.path.isfile(os.path.join(path, "train.csv"))):
        raise _invalid(f"signal: {path or '(empty data_dir)'} is neither a CSV file, a folder with train.csv, "
                       "nor a folder with x.npy and y.npy")
    if not npy and not spec["target_column"]:
        raise _invalid("signal: a CSV of sequences needs its class column: target=COLUMN")
    x, labels, test = _npy(path) if npy else _csv(path, spec["target_column"])
    if test is None:
        train_idx, _, test_idx, _ = _carve_test(np.arange(len(labels)), np.unique(labels, return_inverse=True)[1])
        test = (x[test_idx], [labels[i] for i in test_idx])
        x, labels = x[train_idx], [labels[i] for i in train_idx]
    y_train, y_test, names = _encode_labels(labels, test[1], f"signal {path}")
    known = y_test >= 0
    return Raw("signal", x, y_train, test[0][known], y_test[known], names)


LOADERS = {"signal": load}
