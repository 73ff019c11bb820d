"""Images: Fashion-MNIST, MNIST, CIFAR-10/100, SVHN and scikit-learn's 8x8 digits (the task module
`images`; core/tasks/images.ts is its twin).

All but the digits are read from a directory in their original format (IDX, CIFAR's python
pickles, SVHN's .mat), by default /usr/share/datasets/<name>; nothing is ever downloaded. The
digits come with scikit-learn and ship without a test split, so they get the fixed 20% carve-out
(data_files._carve_test). Every loader returns uint8 [channels, height, width] images with int64
class indices: conversion to float and standardisation happen per batch in the job.
"""
import gzip
import math
import os
import pickle
import struct

import numpy as np

from data_files import Raw, _find, _invalid, _sklearn

FASHION_MNIST_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
DIGIT_CLASSES = [str(i) for i in range(10)]

_DEFAULT_ROOT = "/usr/share/datasets"


def _data_dir(spec, default_name, what):
    path = spec["data_dir"] or os.path.join(_DEFAULT_ROOT, default_name)
    if not os.path.isdir(path):
        raise _invalid(f"{spec['name']}: data directory {path} does not exist "
                       f"(set dataset.data_dir to a directory with {what})")
    return path


# --- IDX (MNIST, Fashion-MNIST) --------------------------------------------------------

def read_idx(path):
    """An IDX file of unsigned bytes (optionally gzipped), as MNIST ships them; lineage-store/predict_model.py reads its inputs with it too."""
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
            array = read_idx(path)
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


LOADERS = {
    "fashion-mnist": lambda spec: _idx_dataset(spec, FASHION_MNIST_CLASSES),
    "cifar100": _cifar100,
    "cifar10": _cifar10,
    "mnist": lambda spec: _idx_dataset(spec, DIGIT_CLASSES),
    "svhn": _svhn,
    "digits": _sklearn("load_digits", images=True),
}
