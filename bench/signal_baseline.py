#!/usr/bin/env python3
"""The hand-written peer of the signal benchmark: a 1-D CNN as a competent user writes one for
MNIST-1D-style data (three convolutions with batch norm, a global max over time, Adam with a
cosine schedule over the time it is given), trained on the same files with the same validation
carve-out size, for a wall-clock budget; then scored once on the test split.

    signal_baseline.py DATA_DIR --seconds S [--seed N] [--threads T]

DATA_DIR holds train.csv and test.csv (bench/signals.py); prints one JSON line.
"""
import argparse
import csv
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn


def read(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    t = header.index("label")
    x = np.array([[float(v) for j, v in enumerate(r) if j != t] for r in rows], dtype=np.float32)
    return x, np.array([int(r[t]) for r in rows])


class Net(nn.Module):
    def __init__(self, classes, width=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(1, width // 2, 5, padding=2), nn.BatchNorm1d(width // 2), nn.ReLU(),
            nn.Conv1d(width // 2, width, 5, stride=2, padding=2), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, width, 3, stride=2, padding=1), nn.BatchNorm1d(width), nn.ReLU(),
        )
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x.unsqueeze(1)).amax(dim=2))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data")
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    t0 = time.monotonic()
    x, y = read(f"{a.data}/train.csv")
    xt, yt = read(f"{a.data}/test.csv")
    # A tenth held out for validation, at least 1,000 examples, as the runner carves it.
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(len(y))
    n_val = max(int(0.1 * len(y)), min(1000, int(0.3 * len(y))))
    val, train = order[:n_val], order[n_val:]
    mean, std = x[train].mean(0), x[train].std(0) + 1e-6
    tensor = lambda arr: torch.from_numpy((arr - mean) / std)
    xtr, ytr = tensor(x[train]), torch.from_numpy(y[train])
    xv, yv = tensor(x[val]), torch.from_numpy(y[val])
    model = Net(int(y.max()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    budget = a.seconds - (time.monotonic() - t0)
    start, epochs = time.monotonic(), 0
    while (elapsed := time.monotonic() - start) < budget:
        model.train()
        for idx in torch.randperm(len(ytr)).split(128):
            frac = min(1.0, (time.monotonic() - start) / budget)
            for g in opt.param_groups:
                g["lr"] = 3e-3 * 0.5 * (1 + math.cos(math.pi * frac))
            loss = nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if time.monotonic() - start >= budget:
                break
        epochs += 1
    print(json.dumps({"seed": a.seed, "seconds": a.seconds, "epochs": epochs, "params": sum(p.numel() for p in model.parameters()),
                      "val_accuracy": accuracy(model, xv, yv), "test_accuracy": accuracy(model, tensor(xt), torch.from_numpy(yt))}))


if __name__ == "__main__":
    main()
