"""Dataset loaders, and what of a dataset a sandboxed job may see. Local files
only: nothing is ever downloaded.

Loaders run in the referee (referee.py, trusted, outside the sandbox): it
splits the data and publishes the inputs and split indices, never a label of
the validation or test split (see `publish`). The zygote loads the published
inputs (numpy only, so no thread pools start before a fork) and caches them:
forked jobs share the arrays copy-on-write and repeated jobs skip decoding.
Images stay uint8; conversion to float and standardisation happen per batch
in the job.

Every loader returns a Raw with a train and a test split. Sets that ship
without a test split get a fixed 20% carved out with a seed that does not
depend on split_seed, so no choice made during search can ever reach it.
"""

import csv
import gzip
import hashlib
import json
import math
import os
import pickle
import re
import struct
import zlib
from dataclasses import dataclass

import numpy as np

import learning
from failures import TaskFailure

TEXT_VOCAB = 1 << 14
TEXT_LENGTH = 128
# A corpus for language modelling is cut into rows of LM_CONTEXT + 1 bytes, each row starting at
# the previous one's last byte, so every byte but the first is a target exactly once; a model
# reads up to LM_CONTEXT bytes (the recipe's context may be shorter) and predicts the next.
LM_CONTEXT = 256
LM_VOCAB = 256
LM_MIN_ROWS = 20
SYNTHETIC_SIZE = 2500
MAX_ONE_HOT_LEVELS = 32

_DEFAULT_ROOT = "/usr/share/datasets"
_TEST_FRACTION = 0.2
_TEST_SEED = 20240611
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
_TOKEN = re.compile(r"[^\W_]+")

FASHION_MNIST_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
DIGIT_CLASSES = [str(i) for i in range(10)]


def _invalid(message):
    return TaskFailure("invalid_config", message)


def columns_text(header, limit=None):
    """A file's column names for a one-line message: a name with a line break or other control
    character in it (a quote left open spans lines) is shown quoted and escaped."""
    shown = [repr(c) if any(ord(ch) < 32 for ch in c) else c for c in header[:limit]]
    return ", ".join(shown) + (" ..." if limit is not None and len(header) > limit else "")


# The proto enum Task by snake_case name (test/core/closed-sets.test.ts holds the two together).
TASKS = learning.NAMES


@dataclass
class Raw:
    """A dataset as a loader returns it; a published one (`load_published`) has no labels (None).

    Classification: y holds class indices (int64) into class_names. Regression: y holds the
    numeric targets (float64) in their own units, and class_names is empty. Language modelling:
    x holds rows of bytes (uint8), y is all zeros (the targets are the next bytes of x), and
    vocab_size is LM_VOCAB.
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
    generated = spec["name"] == "synthetic"
    return (spec["name"], spec["task"], spec["data_dir"], spec["target_column"],
            tuple(spec["shape"]) if generated else (),
            spec["num_classes"] if generated else 0,
            spec["difficulty"] if generated else 0.0,
            spec["split_seed"] if generated else 0)


def load(spec):
    loader = _LOADERS.get(spec["name"])
    if loader is None:
        raise _invalid(f"unknown dataset {spec['name']!r}; known: {', '.join(sorted(_LOADERS))}")
    try:
        raw = loader(spec)
        if raw.task != spec["task"]:
            raise _invalid(f"{spec['name']} is a {raw.task} dataset, not {spec['task']}: "
                           + (learning.of(raw.task).asked_otherwise or learning.of(spec["task"]).needs))
        return raw
    except TaskFailure:
        raise
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


def _data_dir(spec, default_name, what):
    path = spec["data_dir"] or os.path.join(_DEFAULT_ROOT, default_name)
    if not os.path.isdir(path):
        raise _invalid(f"{spec['name']}: data directory {path} does not exist "
                       f"(set dataset.data_dir to a directory with {what})")
    return path


def _find(directory, candidates, dataset, what):
    for candidate in candidates:
        path = os.path.join(directory, candidate)
        if os.path.isfile(path):
            return path
    raise _invalid(f"{dataset}: no {' or '.join(candidates)} in {directory} (expected {what})")


# --- IDX (MNIST, Fashion-MNIST) --------------------------------------------------------

def _read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise _invalid(f"{path}: not an unsigned-byte IDX file (magic {data[:4].hex()})")
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    array = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
    if array.size != math.prod(dims):
        raise _invalid(f"{path}: header announces {dims} but holds {array.size} bytes")
    return array.reshape(dims)


def _idx_dataset(spec, class_names):
    what = "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, " \
           "t10k-labels-idx1-ubyte.gz (gzipped or raw)"
    directory = _data_dir(spec, spec["name"], what)
    arrays = {}
    for part, prefix in (("train", "train"), ("test", "t10k")):
        for kind, ndim in (("images", 3), ("labels", 1)):
            names = [f"{prefix}-{kind}-idx{ndim}-ubyte{ext}" for ext in (".gz", "")] + \
                    [f"{prefix}-{kind}.idx{ndim}-ubyte"]
            path = _find(directory, names, spec["name"], what)
            array = _read_idx(path)
            if array.ndim != ndim:
                raise _invalid(f"{path}: expected {ndim} dimensions, found {array.ndim}")
            arrays[part, kind] = array
        if len(arrays[part, "images"]) != len(arrays[part, "labels"]):
            raise _invalid(f"{spec['name']}: {part} split has {len(arrays[part, 'images'])} images "
                           f"but {len(arrays[part, 'labels'])} labels in {directory}")
    return Raw(spec["name"],
               arrays["train", "images"][:, None], arrays["train", "labels"].astype(np.int64),
               arrays["test", "images"][:, None], arrays["test", "labels"].astype(np.int64),
               class_names)


# --- CIFAR (torchvision's python pickle layout) ---------------------------------------

class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists and numpy arrays only: a data file must not be able to run code."""
    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"),
                ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"), ("_codecs", "encode")}

    def find_class(self, module, name):
        # numpy 2 pickles name numpy._core where numpy 1 (and the CIFAR files) name numpy.core;
        # each numpy reads both.
        plain = module.replace("numpy._core", "numpy.core", 1)
        if (plain, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name}")
        return super().find_class(plain if not hasattr(np, "_core") else module.replace("numpy.core", "numpy._core", 1), name)


def _unpickle(path):
    with open(path, "rb") as f:
        # latin1 reads the original Python 2 pickles, whose numpy arrays hold raw bytes.
        obj = _ArrayUnpickler(f, encoding="latin1").load()
    if not isinstance(obj, dict):
        raise _invalid(f"{path}: expected a pickled dict, found {type(obj).__name__}")
    return obj


def _cifar(spec, folder, train_files, test_file, meta_file, label_key, names_key):
    what = f"{folder}/ ({', '.join(train_files + [test_file, meta_file])})"
    directory = _data_dir(spec, spec["name"], what)
    if os.path.isdir(os.path.join(directory, folder)):
        directory = os.path.join(directory, folder)

    def read(files):
        xs, ys = [], []
        for name in files:
            path = _find(directory, [name], spec["name"], what)
            batch = _unpickle(path)
            if "data" not in batch or label_key not in batch:
                raise _invalid(f"{path}: expected keys 'data' and {label_key!r}, found {sorted(batch)}")
            xs.append(np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(batch[label_key], dtype=np.int64))
        return np.concatenate(xs), np.concatenate(ys)

    x_train, y_train = read(train_files)
    x_test, y_test = read([test_file])
    meta = _unpickle(_find(directory, [meta_file], spec["name"], what))
    names = [str(n) for n in meta.get(names_key, [])]
    if not names:
        raise _invalid(f"{directory}/{meta_file}: no {names_key!r} entry")
    return Raw(spec["name"], x_train, y_train, x_test, y_test, names)


def _cifar10(spec):
    return _cifar(spec, "cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)],
                  "test_batch", "batches.meta", "labels", "label_names")


def _cifar100(spec):
    return _cifar(spec, "cifar-100-python", ["train"], "test", "meta", "fine_labels", "fine_label_names")


# --- SVHN (cropped digits, .mat) --------------------------------------------------------

def _svhn(spec):
    import scipy.io  # the referee's import only: the zygote never loads a dataset

    what = "train_32x32.mat and test_32x32.mat"
    directory = _data_dir(spec, "svhn", what)
    parts = []
    for name in ("train_32x32.mat", "test_32x32.mat"):
        path = _find(directory, [name], "svhn", what)
        mat = scipy.io.loadmat(path)
        if "X" not in mat or "y" not in mat:
            raise _invalid(f"{path}: expected variables X and y")
        x = np.ascontiguousarray(mat["X"].transpose(3, 2, 0, 1), dtype=np.uint8)
        parts += [x, mat["y"].ravel().astype(np.int64) % 10]  # label 10 is the digit 0
    return Raw("svhn", *parts, DIGIT_CLASSES)


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


# --- labels shared by csv and text ----------------------------------------------------

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


# --- CSV ----------------------------------------------------------------------------------

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


# --- text -----------------------------------------------------------------------------

def tokenize(text):
    """Hashing tokenizer: stable bucket ids in [1, TEXT_VOCAB), 0 is padding."""
    ids = [zlib.crc32(token.encode()) % (TEXT_VOCAB - 1) + 1 for token in _TOKEN.findall(text.lower())]
    ids = ids[:TEXT_LENGTH]
    return ids + [0] * (TEXT_LENGTH - len(ids))


def _read_text(path):
    """(texts, labels) of a .tsv with a header or a .jsonl file; None when it carries no labels."""
    texts, labels = [], []
    if path.endswith(".tsv"):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = [h.strip().lower() for h in next(reader, [])]
            text_col = next((header.index(c) for c in ("sentence", "text") if c in header), None)
            if text_col is None:
                raise _invalid(f"{path}: expected a header with a 'sentence' or 'text' column, found {header}")
            if "label" not in header:
                return None
            label_col = header.index("label")
            for line, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) <= max(text_col, label_col):
                    raise _invalid(f"{path}: line {line} has {len(row)} fields, expected {len(header)}")
                texts.append(row[text_col])
                labels.append(row[label_col].strip())
    else:
        with open(path, encoding="utf-8") as f:
            for line, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                record = json.loads(raw)
                text = record.get("text", record.get("sentence")) if isinstance(record, dict) else None
                if not isinstance(text, str):
                    raise _invalid(f"{path}: line {line} has no string 'text' field")
                if "label" not in record:
                    return None
                texts.append(text)
                labels.append(str(record["label"]).strip())
    return texts, labels


def _text(spec):
    directory = spec["data_dir"]
    if not os.path.isdir(directory):
        raise _invalid(f"text: data_dir {directory or '(empty)'} is not a directory "
                       "(expected train.tsv or train.jsonl, optional test.tsv/test.jsonl/dev.tsv)")
    train = _read_text(_find(directory, ["train.tsv", "train.jsonl"], "text",
                             "train.tsv (header sentence<TAB>label) or train.jsonl ({text, label} lines)"))
    if train is None or not train[0]:
        raise _invalid(f"text: the training file in {directory} has no labelled rows")
    test = None
    for name in ("test.tsv", "test.jsonl", "dev.tsv", "dev.jsonl"):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            test = _read_text(path)
            if test is not None:
                break
    x_train = np.array([tokenize(t) for t in train[0]], dtype=np.int64).reshape(-1, TEXT_LENGTH)
    if test is None:
        y_all, _, names = _encode_labels(train[1], [], f"text {directory}")
        split_parts = _carve_test(x_train, y_all)
    else:
        y_train, y_test, names = _encode_labels(train[1], test[1], f"text {directory}")
        x_test = np.array([tokenize(t) for t in test[0]], dtype=np.int64).reshape(-1, TEXT_LENGTH)
        split_parts = (x_train, y_train, x_test[y_test >= 0], y_test[y_test >= 0])
    return Raw("text", *split_parts, names, vocab_size=TEXT_VOCAB)


def _corpus(spec):
    """A text file, or the .txt files of a folder in path order, as bytes; the last rows are the test split."""
    path = spec["data_dir"]
    if os.path.isdir(path):
        files = sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names if f.endswith(".txt"))
        if not files:
            raise _invalid(f"text: {path} holds no .txt file to model")
    elif os.path.isfile(path):
        files = [path]
    else:
        raise _invalid(f"text: {path or '(empty data_dir)'} is not a file or a directory "
                       "(a language model reads a text file, or a folder of .txt files)")
    parts = []
    for name in files:
        with open(name, "rb") as f:
            parts.append(f.read())
    data = np.frombuffer(b"\n".join(parts), np.uint8)
    rows = (len(data) - 1) // LM_CONTEXT
    if rows < LM_MIN_ROWS:
        raise _invalid(f"text: {path} holds {len(data):,} bytes; a language model needs at least "
                       f"{LM_MIN_ROWS * LM_CONTEXT + 1:,} ({LM_MIN_ROWS} rows of {LM_CONTEXT} bytes)")
    x = data[np.arange(rows)[:, None] * LM_CONTEXT + np.arange(LM_CONTEXT + 1)]
    # The tail, not a random draw: test text never interleaves with the text trained on.
    n_test = int(round(rows * _TEST_FRACTION))
    y = np.zeros(rows, np.int64)
    return Raw("text", x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:], [], vocab_size=LM_VOCAB,
               task="language_modelling")


# --- synthetic ------------------------------------------------------------------------

def _synthetic(spec):
    """Class-dependent means plus Gaussian noise; difficulty 0 is trivially separable, 1 nearly noise.

    Means have unit norm, so separability does not depend on the input size: the noise
    scale runs from 0.07 (class distance ~20 sigma) to 14 (~0.1 sigma).
    """
    shape, classes = tuple(spec["shape"]), spec["num_classes"]
    rng = np.random.default_rng(spec["split_seed"])
    if len(shape) == 3:
        # Smooth, blob-like means give convolutions something spatial to find.
        c, h, w = shape
        coarse = rng.normal(size=(classes, c, -(-h // 4), -(-w // 4)))
        means = coarse.repeat(4, axis=2).repeat(4, axis=3)[:, :, :h, :w].reshape(classes, -1)
    else:
        means = rng.normal(size=(classes, math.prod(shape)))
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    sigma = 0.07 * 200.0 ** spec["difficulty"]
    y = rng.permutation(np.arange(SYNTHETIC_SIZE) % classes)
    x = means[y] + sigma * rng.normal(size=(SYNTHETIC_SIZE, means.shape[1]))
    x = x.astype(np.float32).reshape((SYNTHETIC_SIZE,) + shape)
    return Raw("synthetic", *_carve_test(x, y.astype(np.int64)), [f"class_{i}" for i in range(classes)])


_LOADERS = {
    "fashion-mnist": lambda spec: _idx_dataset(spec, FASHION_MNIST_CLASSES),
    "mnist": lambda spec: _idx_dataset(spec, DIGIT_CLASSES),
    "cifar10": _cifar10,
    "cifar100": _cifar100,
    "svhn": _svhn,
    "digits": _sklearn("load_digits", images=True),
    "iris": _sklearn("load_iris"),
    "wine": _sklearn("load_wine"),
    "breast_cancer": _sklearn("load_breast_cancer"),
    "diabetes": _sklearn("load_diabetes", regression=True),
    "csv": _csv,
    "text": lambda spec: _corpus(spec) if spec["task"] == "language_modelling" else _text(spec),
    "synthetic": _synthetic,
}
# Tasks added through the registry (tasks/) bring their own loaders; the built-in names come first.
import tasks  # noqa: E402  (the registry imports nothing of this module until it loads a dataset)

_LOADERS = {**tasks.LOADERS, **_LOADERS}
KNOWN = tuple(sorted(_LOADERS))
