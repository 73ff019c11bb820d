#!/usr/bin/env python3
"""Procedurally generated 1-D signals of ten classes, in the manner of MNIST-1D (Greydanus 2020):
each class is a 12-step template, stretched, scaled, sheared, placed at a random offset of a
40-step window and buried in correlated and white noise. Where a pattern sits carries no class,
so a model must recognise shapes wherever they fall: a linear model stays far below a 1-D CNN.

With --hard, a task that tells a strong model from a weak one (the default one a hand-written CNN
nearly saturates in minutes): 80-step windows holding two shapes one after the other, the class
being the ordered pair (HARD_SHAPES, twelve classes: the same two shapes in the other order are
another class, so where each sits relative to the other matters, not only which shapes occur), at
independent offsets and gaps, in stronger noise. Give it fewer training sequences too
(bench/tasks-series.sh uses --train 3000).

    signals.py OUT [--train N] [--test N] [--seed S] [--format csv|npy] [--hard]

csv: OUT/train.csv and OUT/test.csv, columns x0..x39 (x0..x79 with --hard) and label (the runner's
`signal:OUT target=label`); npy: OUT/x.npy, y.npy, x_test.npy, y_test.npy. Deterministic for a seed.
"""
import argparse
import csv
import os

import numpy as np

TEMPLATES = np.array([
    [5, 6, 6.5, 6.75, 7, 7, 7, 7, 6.75, 6.5, 6, 5],
    [5, 3, 3, 3.4, 3.8, 4.2, 4.6, 5, 5.4, 5.8, 5, 5],
    [5, 6, 6.5, 6.5, 6, 5.25, 4.75, 4, 3.5, 3.5, 4, 5],
    [5, 6, 6.5, 6.5, 6, 5, 5, 6, 6.5, 6.5, 6, 5],
    [5, 4.4, 3.8, 3.2, 2.6, 2.6, 5, 5, 5, 5, 5, 5],
    [5, 3, 3, 3, 3, 5, 6, 6.5, 6.5, 6, 4.5, 5],
    [5, 4, 3.5, 3.25, 3, 3, 3, 3, 3.25, 3.5, 4, 5],
    [5, 7, 7, 6.6, 6.2, 5.8, 5.4, 5, 4.6, 4.2, 5, 5],
    [5, 4, 3.5, 3.5, 4, 5, 5, 4, 3.5, 3.5, 4, 5],
    [5, 4, 3.5, 3.5, 4, 4.75, 5.25, 6, 6.5, 6.5, 6, 5],
]) - 5
LENGTH = 40
# --hard: four of the templates, every ordered pair of two different ones a class.
HARD_SHAPES = (0, 2, 5, 8)
HARD_PAIRS = [(a, b) for a in HARD_SHAPES for b in HARD_SHAPES if a != b]
HARD_LENGTH = 80


def shape(template, steps, rng):
    """One template stretched to `steps`, scaled and sheared."""
    s = np.interp(np.linspace(0, 11, steps), np.arange(12), TEMPLATES[template])
    return s * rng.uniform(0.6, 1.4) + rng.uniform(-0.75, 0.75) * np.linspace(-0.5, 0.5, steps)


def noise(length, rng, smooth, white):
    correlated = np.convolve(rng.normal(size=length + 8), np.ones(9) / 9, mode="valid")
    return smooth * correlated + white * rng.normal(size=length)


def sample(label, rng):
    s = shape(label, int(rng.integers(18, 31)), rng)
    x = np.zeros(LENGTH)
    offset = int(rng.integers(0, LENGTH - len(s) + 1))
    x[offset:offset + len(s)] = s
    return x + noise(LENGTH, rng, 1.2, 0.2)


def sample_hard(label, rng):
    pieces = [shape(t, int(rng.integers(14, 25)), rng) for t in HARD_PAIRS[label]]
    # The free steps cut at two uniform points: before the first shape, between them, after.
    free = HARD_LENGTH - sum(len(p) for p in pieces)
    before, between = np.sort(rng.integers(0, free + 1, size=2))
    x = np.zeros(HARD_LENGTH)
    first = int(before)
    second = first + len(pieces[0]) + int(between - before)
    x[first:first + len(pieces[0])] = pieces[0]
    x[second:second + len(pieces[1])] = pieces[1]
    return x + noise(HARD_LENGTH, rng, 1.2, 0.3)


def make(n, rng, hard=False):
    classes, draw = (len(HARD_PAIRS), sample_hard) if hard else (len(TEMPLATES), sample)
    y = rng.permutation(np.arange(n) % classes)
    return np.stack([draw(int(c), rng) for c in y]).astype(np.float32), y


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--train", type=int, default=4000)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["csv", "npy"], default="csv")
    p.add_argument("--hard", action="store_true", help="80 steps, the class an ordered pair of shapes, stronger noise")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    (x, y), (xt, yt) = make(a.train, rng, a.hard), make(a.test, rng, a.hard)
    os.makedirs(a.out, exist_ok=True)
    if a.format == "npy":
        for name, arr in (("x", x), ("y", y), ("x_test", xt), ("y_test", yt)):
            np.save(os.path.join(a.out, f"{name}.npy"), arr)
        return
    for name, (xs, ys) in (("train", (x, y)), ("test", (xt, yt))):
        with open(os.path.join(a.out, f"{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow([f"x{i}" for i in range(xs.shape[1])] + ["label"])
            for row, label in zip(xs, ys):
                w.writerow([f"{v:.4f}" for v in row] + [int(label)])


if __name__ == "__main__":
    main()
