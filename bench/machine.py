"""The machine a benchmark figure came from, as every result in bench/results records it: the CPU
model, its cores, whether it computes bf16 natively (AVX512-BF16 or AMX; without, bf16 is emulated
and the runner trains in fp32) and has AVX-512, the torch version, and a calibration: the median
milliseconds of one fixed training step (a small BN CNN, a batch of 64 28x28 images, fp32, one
thread), so figures from machines of one kind that differ in speed compare by ratio.

    python3 bench/machine.py          # prints the JSON
    import machine; machine.fingerprint()
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu-runner", "python"))
import accel  # noqa: E402  (the runner's own reading of /proc/cpuinfo)

CALIBRATION_STEPS = 12


def calibration_step_ms():
    """The median of CALIBRATION_STEPS timed steps after two warm ones, on one thread, fixed seed."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
        times = []
        for i in range(CALIBRATION_STEPS + 2):
            t = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i >= 2:
                times.append(1000 * (time.perf_counter() - t))
        return round(statistics.median(times), 3)
    finally:
        torch.set_num_threads(threads)


def fingerprint():
    flags = set((accel._cpuinfo("flags") or "").split())
    return {"cpu": accel._cpu_name(), "cores": os.cpu_count(), "cpu_bf16": accel.cpu_bf16(),
            "avx512": "avx512f" in flags, "torch": torch.__version__, "calibration_step_ms": calibration_step_ms()}


if __name__ == "__main__":
    print(json.dumps(fingerprint()))
