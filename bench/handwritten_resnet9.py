#!/usr/bin/python3
"""The hand-written peer: the ResNet-9 script a competent user writes for Fashion-MNIST, no search.

The recipe that trains ResNet-9 fastest (Page, "How to train your ResNet", 2018; the airbench and
hlb-CIFAR10 line after it): a stem and three stages doubling the channels, the first two with a
residual pair; SGD with Nesterov momentum 0.9, one cycle (a linear rise over the first quarter, a
linear fall to zero), label smoothing 0.1, weight decay 5e-4, the learning rate scaled with the
batch (0.2 at 512); flip and pad-2 crop (cutout with --cutout); bf16 autocast and channels-last
where the device computes bf16 natively; predictions averaged with the flipped image's at
evaluation. It trains on the runner's training split (bench/fmnist.py: the swarm's own split, as
Optuna's peer has), validates on its validation split and is evaluated once on the test split.

The budget covers everything, start-up and the evaluations included: training stops before it by
the evaluations' predicted time and `--reserve-s`, and the schedule runs on time (its progress is the elapsed share of the training's
seconds), so the cycle ends when the time does, whatever the device's speed. The net is as wide
as the budget affords, as a user sizes a model to the time they have: the widest stem of 16, 24,
32, 48 or 64 channels (64: Page's 6.6M parameters here) that trains at least MIN_EPOCHS epochs, its
epoch predicted from a few timed steps at 16 channels (a convolution's cost grows with the square
of its width). Batches of 512 on a GPU, 128 on a CPU.

    python3 bench/handwritten_resnet9.py --budget-s 300 --device auto --seed 0 --out /tmp/hand.json

Needs torch only (numpy through the runner's loader); scripts/gpu-check.sh runs it beside the
search and Optuna, bench/search-series.sh --handwritten N on a CPU.
"""

import time

T0 = time.monotonic()

import argparse  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fmnist import Data, binomial_ci95, write_result  # noqa: E402  (the runner's loader and split, as tensors)
from machine import fingerprint  # noqa: E402
import accel  # noqa: E402  (the runner's test of native bf16; on the path fmnist.py sets)
import augment  # noqa: E402  (the runner's flip / crop / cutout)


def elapsed():
    return time.monotonic() - T0


def conv_bn(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

    def forward(self, x):
        return x + self.body(x)


class ResNet9(nn.Module):
    def __init__(self, width=64, num_classes=10):
        super().__init__()
        w = width
        self.net = nn.Sequential(
            conv_bn(1, w),
            conv_bn(w, 2 * w), nn.MaxPool2d(2), Residual(2 * w),
            conv_bn(2 * w, 4 * w), nn.MaxPool2d(2),
            conv_bn(4 * w, 8 * w), nn.MaxPool2d(2), Residual(8 * w),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8 * w, num_classes, bias=False),
        )

    def forward(self, x):
        # Page's output scaling: the logits of a max-pooled head are large at initialisation.
        return self.net(x) * 0.125


WIDTHS = (16, 24, 32, 48, 64)
MIN_EPOCHS = 16  # Page's recipe trained 24 epochs, airbench 10-20: fewer and the cycle is too short to pay


def affordable_width(data, batch, amp, seconds):
    """The widest of WIDTHS whose predicted epochs in `seconds` reach MIN_EPOCHS (16 if none does)."""
    probe = ResNet9(WIDTHS[0]).to(data.device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(probe.parameters(), lr=0.0)
    x = data.inputs(data.x_train[data.train[:batch]]).contiguous(memory_format=torch.channels_last)
    y = data.y_train[data.train[:batch]]
    times = []
    for _ in range(6):
        t = time.perf_counter()
        with torch.autocast(data.device.type, dtype=torch.bfloat16, enabled=amp):
            loss = nn.functional.cross_entropy(probe(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if data.device.type == "cuda":
            torch.cuda.synchronize(data.device)
        times.append(time.perf_counter() - t)
    epoch_s = sorted(times[1:])[2] * len(data.train) / batch  # the median of the warm steps
    fits = [w for w in WIDTHS if seconds / (epoch_s * (w / WIDTHS[0]) ** 2) >= MIN_EPOCHS]
    return (fits[-1] if fits else WIDTHS[0]), epoch_s


def one_cycle(progress, peak):
    """A linear rise to `peak` over the first quarter, then a linear fall to zero."""
    return peak * (progress / 0.25 if progress < 0.25 else max(0.0, (1 - progress) / 0.75))


def evaluate(model, data, x_all, y_all, idx, amp):
    """Accuracy with test-time flip averaging: the logits of the image and of its mirror, summed."""
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast(data.device.type, dtype=torch.bfloat16, enabled=amp):
        for chunk in idx.split(1000):
            x = data.inputs(x_all[chunk]).contiguous(memory_format=torch.channels_last)
            logits = model(x).float() + model(x.flip(3)).float()
            correct += (logits.argmax(1) == y_all[chunk]).sum().item()
    return correct / len(idx)


def machine(device):
    """What made the figure (bench/machine.py), and the GPU if one trained it."""
    out = fingerprint()
    if device.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(device)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=1800, help="wall-clock seconds for everything, start-up included")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto", help="auto: the GPU when there is one")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--width", type=int, default=0, help="stem channels (default: the widest the budget affords)")
    ap.add_argument("--batch-size", type=int, default=0, help="default: 512 on a GPU, 128 on a CPU")
    ap.add_argument("--cutout", type=int, default=0, help="side of a square cut out of each training image; 0: none")
    ap.add_argument("--reserve-s", type=float, default=10, help="seconds kept back for the result, besides the evaluations' predicted time")
    ap.add_argument("--data-dir", default="", help="Fashion-MNIST's idx files (default: where the runner's loader looks)")
    ap.add_argument("--no-amp", action="store_true", help="train in fp32 even where the device computes bf16 natively")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    gpu = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda", torch.cuda.current_device()) if gpu else torch.device("cpu")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    amp = not args.no_amp and (torch.cuda.is_bf16_supported() if gpu else accel.cpu_bf16())
    batch = args.batch_size or (512 if gpu else 128)
    peak = 0.2 * batch / 512

    data = Data(device, args.data_dir)
    loaded_s = elapsed()
    width, probe_epoch_s = affordable_width(data, batch, amp, args.budget_s - args.reserve_s - elapsed())
    width = args.width or width
    # The evaluations after training: validation and test, each image and its mirror, a forward
    # pass about a third of a training step's cost per example.
    eval_s = probe_epoch_s * (width / WIDTHS[0]) ** 2 * 2 * (len(data.val) + len(data.test)) / len(data.train) / 3
    torch.manual_seed(args.seed)
    model = ResNet9(width).to(device, memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9, nesterov=True, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    aug = {"hflip": True, "crop_padding": 2, "cutout": args.cutout}
    n = len(data.train)
    steps = n // batch + (1 if n % batch > 1 else 0)  # no final batch of one (batch norm)

    train_start = elapsed()
    train_s = args.budget_s - args.reserve_s - eval_s - train_start
    epochs, curve, done = 0, [], False
    while not done:
        model.train()
        order = data.train[torch.randperm(n, device=device)]
        loss_sum = 0.0
        for step in range(steps):
            progress = (elapsed() - train_start) / train_s
            if progress >= 1:
                done = True
                break
            for group in opt.param_groups:
                group["lr"] = one_cycle(progress, peak)
            idx = order[step * batch:(step + 1) * batch]
            x = augment.apply(data.inputs(data.x_train[idx]), aug).contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                logits = model(x)
            loss = criterion(logits.float(), data.y_train[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
        else:
            epochs += 1
            curve.append({"epoch": epochs, "train_loss": round(loss_sum / steps, 4), "seconds": round(elapsed(), 1)})
            print(f"[{elapsed():7.1f}s] epoch {epochs} train loss {loss_sum / steps:.4f}", flush=True)
    trained_s = elapsed() - train_start

    val_accuracy = evaluate(model, data, data.x_train, data.y_train, data.val, amp)
    test_accuracy = evaluate(model, data, data.x_test, data.y_test, data.test, amp)
    result = {
        "method": "handwritten-resnet9", "seed": args.seed, "budget_s": args.budget_s,
        "val_accuracy": val_accuracy, "test_accuracy": test_accuracy,
        "test_ci95": binomial_ci95(test_accuracy, len(data.test)),
        "width": width, "probe_epoch_s_at_16": round(probe_epoch_s, 2), "eval_reserve_s": round(eval_s, 1), "params": params, "batch_size": batch, "peak_lr": peak, "cutout": args.cutout,
        "epochs_completed": epochs, "epoch_fraction": round(epochs + (step / steps if done else 0), 3),
        "train_s": round(trained_s, 1), "data_load_s": round(loaded_s, 1), "seconds": round(elapsed(), 1),
        "n_train": n, "n_val": len(data.val), "n_test": len(data.test),
        "device": "cuda" if gpu else "cpu", "precision": "bf16" if amp else "fp32", "threads": args.threads,
        "machine": machine(device), "loadavg": list(os.getloadavg()), "curve": curve,
    }
    write_result(args.out, result, ("curve",))


if __name__ == "__main__":
    main()
