"""A CNN's training step on one CPU core: contiguous memory, channels-last, and channels-last in
bf16 autocast (where the CPU computes bf16 natively, as the runner trains a mixed-precision
recipe: gpu-runner/python/accel.py).

    .venv/bin/python bench/channels_last.py [--model reference|vgg] [--steps 30] [--repeats 4]

Times Adam steps on random 28x28 batches, one thread (a runner slot's share of a 2-core machine):
bench/start/reference_cnn.py's FashionCNN (61k parameters), or the planner's VGG-style template
(agents/planner/templates.ts vgg-cnn: two convolutions per stage, 24-48-96 channels, 170k). The
settings take turns, so that load on a shared machine falls on all; prints each one's median as
seconds per Fashion-MNIST epoch (54,000 examples) and its speed against contiguous fp32, per batch size.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "start"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "gpu-runner", "python"))
from reference_cnn import FashionCNN  # noqa: E402
import accel  # noqa: E402


def vgg():
    layers, c, w = [], 1, 24
    for _ in range(3):
        layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                   nn.Conv2d(w, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
        c, w = w, w * 2
    return nn.Sequential(*layers, nn.Flatten(), nn.Dropout(0.3), nn.Linear(c * 3 * 3, 10))


MODELS = {"reference": FashionCNN, "vgg": vgg}


def epoch_seconds(model_fn, channels_last, bf16, batch, steps):
    torch.manual_seed(0)
    model = model_fn()
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), 2e-3)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps / batch * 54_000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=sorted(MODELS), default="reference")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=4)
    a = p.parse_args()
    torch.set_num_threads(1)
    settings = {"contiguous": (False, False), "channels-last": (True, False)}
    if accel.cpu_bf16():
        settings["channels-last bf16"] = (True, True)
    print(f"torch {torch.__version__}, {a.model}, 1 thread, load {os.getloadavg()[0]:.1f}, "
          f"bf16 {'native' if accel.cpu_bf16() else 'not native here: not measured'}")
    for batch in (64, 128, 256):
        times = {name: [] for name in settings}
        for _ in range(a.repeats):
            for name, (last, bf16) in settings.items():
                times[name].append(epoch_seconds(MODELS[a.model], last, bf16, batch, a.steps))
        med = {name: statistics.median(t) for name, t in times.items()}
        base = med["contiguous"]
        print(f"batch {batch}: " + ", ".join(f"{name} {s:.1f} s/epoch ({base / s:.2f}x)" for name, s in med.items()))


if __name__ == "__main__":
    main()
