#!/usr/bin/env python3
"""Procedurally generated 1-D signals of ten classes, in the manner of MNIST-1D (Greydanus 2020):
each class is a 12-step template, stretched, scaled, sheared, placed at a random offset of a
40-step window and buried in correlated and white noise. Where a pattern sits carries no class,
so a model must recognise shapes wherever they fall: a linear model stays far below a 1-D CNN.

    signals.py OUT [--train N] [--test N] [--seed S] [--format csv|npy]

csv: OUT/train.csv and OUT/test.csv, columns x0..x39 and label (the runner's `signal:OUT target=label`);
npy: OUT/x.npy, y.npy, x_test.npy, y_test.npy. Deterministic for a seed.
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


def sample(label, rng):
    steps = int(rng.integers(18, 31))
    s = np.interp(np.linspace(0, 11, steps), np.arange(12), TEMPLATES[label])
    s = s * rng.uniform(0.6, 1.4) + rng.uniform(-0.75, 0.75) * np.linspace(-0.5, 0.5, steps)
    x = np.zeros(LENGTH)
    offset = int(rng.integers(0, LENGTH - steps + 1))
    x[offset:offset + steps] = s
    smooth = np.convolve(rng.normal(size=LENGTH + 8), np.ones(9) / 9, mode="valid")
    return x + 1.2 * smooth + 0.2 * rng.normal(size=LENGTH)


def make(n, rng):
    y = rng.permutation(np.arange(n) % len(TEMPLATES))
    return np.stack([sample(int(c), rng) for c in y]).astype(np.float32), y


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--train", type=int, default=4000)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["csv", "npy"], default="csv")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    (x, y), (xt, yt) = make(a.train, rng), make(a.test, rng)
    os.makedirs(a.out, exist_ok=True)
    if a.format == "npy":
        for name, arr in (("x", x), ("y", y), ("x_test", xt), ("y_test", yt)):
            np.save(os.path.join(a.out, f"{name}.npy"), arr)
        return
    for name, (xs, ys) in (("train", (x, y)), ("test", (xt, yt))):
        with open(os.path.join(a.out, f"{name}.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow([f"x{i}" for i in range(LENGTH)] + ["label"])
            for row, label in zip(xs, ys):
                w.writerow([f"{v:.4f}" for v in row] + [int(label)])


if __name__ == "__main__":
    main()
