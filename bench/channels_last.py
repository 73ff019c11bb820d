"""The reference CNN's training step on one CPU core, contiguous against channels-last memory.

    .venv/bin/python bench/channels_last.py [--steps 30] [--repeats 4]

Times Adam steps of bench/start/reference_cnn.py's FashionCNN (61k parameters) on random
28x28 batches, one thread (a runner slot's share of a 2-core machine), the two layouts taking
turns so that load on a shared machine falls on both; prints each layout's median as seconds
per Fashion-MNIST epoch (54,000 examples) and the ratio, per batch size.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "start"))
from reference_cnn import FashionCNN  # noqa: E402


def epoch_seconds(channels_last, batch, steps):
    torch.manual_seed(0)
    model = FashionCNN()
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), 2e-3)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps / batch * 54_000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=4)
    a = p.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, load {os.getloadavg()[0]:.1f}")
    for batch in (64, 128, 256):
        plain, last = [], []
        for _ in range(a.repeats):
            plain.append(epoch_seconds(False, batch, a.steps))
            last.append(epoch_seconds(True, batch, a.steps))
        p, c = statistics.median(plain), statistics.median(last)
        print(f"batch {batch}: contiguous {p:.1f} s/epoch, channels-last {c:.1f} s/epoch, {p / c:.2f}x")


if __name__ == "__main__":
    main()
