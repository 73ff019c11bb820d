"""Synthetic data, the task module `synthetic` (core/tasks/synthetic.ts is its twin): classes drawn
for the spec's shape, number of classes and difficulty, for tests and benchmarks that need data of
a given size. Inputs are float32 images ([channels, height, width]) or rows, SYNTHETIC_SIZE
examples with the fixed 20% carve-out as the test split.
"""
import math

import numpy as np

from data_files import Raw, _carve_test

SYNTHETIC_SIZE = 2500

# Drawn from the spec rather than read from files: its shape, classes, difficulty and seed are part
# of what determines the data (datasets.cache_key).
GENERATED = frozenset({"synthetic"})


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


LOADERS = {"synthetic": _synthetic}
