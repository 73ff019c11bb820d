#!/usr/bin/python3
"""Optuna baseline for the search benchmark (bench/search-bench.ts): TPE + median pruning on Fashion-MNIST.

Same data as the swarm's runner: the loader and the train/validation split are the runner's own
(gpu-runner/python/datasets.py, through bench/fmnist.py), with its defaults for a Fashion-MNIST goal
(6,000 validation images, split_seed 0, the official 10k test set). Every trial validates on the
runner's full-data validation split (6,000 images); a trial that trains on a subset (the swarm's
cheap fidelities do too) takes a stratified slice of the runner's training indices.

Search space, comparable to the swarm's built-in templates: a BN-CNN (conv-BN-ReLU blocks and
max-pooling), width, depth, convolutions per stage, an optional hidden layer, dropout; Adam, AdamW
or SGD with momentum, lr, weight decay, batch size, epochs (2-12), no schedule or cosine, label
smoothing, optional flip and crop augmentation (the runner's augment.py), training subset.

Channels-last memory and, on a CPU that computes bf16 natively, bf16 autocast, as a competent user
on a CPU would choose (torch 2.x trains these CNNs 1.5-1.6x faster in channels-last on one core,
and 1.6x faster again in bf16 on an AVX512-BF16 CPU, docs/BENCHMARKS.md); the swarm's CPU trials
use both (gpu-runner/python/accel.py decides bf16 by the same test). --no-amp trains in fp32.

One seed per trial, per-epoch `trial.report` of validation accuracy and MedianPruner. The wall-clock
budget covers everything, start-up and the final step included: nothing is retrained; the best
completed trial's weights, kept in memory, are evaluated once on the test split. A trial still
training when the budget (less a reserve for that evaluation) runs out is stopped and counted as
cut, never as complete.

    bench/out/venv-optuna/bin/python bench/optuna_baseline.py --budget-s 1800 --seed 0 --out /tmp/optuna.json

With --dataset digits (scikit-learn's 8x8 digits, the runner's `digits` with its fixed 20% test
carve-out and 431 validation images) the same space fitted to 8x8 images (ImageSpace); with
--dataset signal --data-dir DIR (train.csv and test.csv of bench/signals.py, class column
--target) a 1-D CNN space (SignalSpace). bench/tasks-series.sh runs both beside the swarm; the
result's `models` holds the pick as that series reads a peer:

    bench/out/venv-optuna/bin/python bench/optuna_baseline.py --dataset digits --budget-s 180 --seed 0 --out /tmp/digits.jsonl
    bench/out/venv-optuna/bin/python bench/optuna_baseline.py --dataset signal --data-dir /tmp/sig --budget-s 240 --out /tmp/sig.jsonl

On a GPU (--device cuda, what scripts/gpu-check.sh runs beside the search in one sitting) the data
sit on the device, training is in bf16 autocast where the GPU has it, and the space is what a
competent user gives a GPU: wider nets (32-96 channels), batches of 128-512, up to 20 epochs.

With --pareto (issue 39's benchmark), a multi-objective study of validation accuracy (maximised),
parameters and latency per example (minimised): Optuna's multi-objective TPE sampler over the same
space, without pruning (Optuna's pruners refuse multi-objective studies), each completed model
timed as the runner times one (batch 1, warm, the median of up to 30 passes, one thread, in the
evaluation's precision and memory layout). At the end every trial of the study's front
(study.best_trials) is evaluated once on the test split, and the result lists them.

With --max-latency-ms L (issue 39's constrained benchmark), the single-objective study with the
latency per example at most L as a constraint, as a competent user sets one (Trial.set_constraint:
TPE learns where the feasible region is), each model timed as above before it trains
(untrained weights cost the same to run), one over the limit stopped at once (pruned, infeasible),
and the best *feasible* completed trial evaluated on the test split.

Needs torch and optuna: bench/search-series.sh makes bench/out/venv-optuna (torch 2.13 from this
machine's wheel, as the runner's .venv has, and Optuna from PyPI); Debian's python3-optuna beside
python3-torch 1.13 works too.
"""

import time

T0 = time.monotonic()

import argparse  # noqa: E402
import copy  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from fmnist import Data, binomial_ci95, write_result  # noqa: E402  (the runner's loader and split, as tensors)
import accel  # noqa: E402  (the runner's test of native bf16; on the path fmnist.py sets)
import augment  # noqa: E402  (the runner's flip / crop)

import optuna  # noqa: E402

TARGET = 0.90
DEVICE = torch.device("cpu")  # set in main()
SUBSETS = [10000, 20000, 40000, 0]  # the random planner's fidelities; 0 = the whole training split


def elapsed():
    return time.monotonic() - T0


class BudgetCut(Exception):
    pass


class Net(nn.Module):
    """The BN-CNN over images, in channels-last memory."""

    def __init__(self, width, stages, convs, hidden, dropout, num_classes=10, side=28, channels=1):
        super().__init__()
        layers, c, w = [], channels, width
        for _ in range(stages):
            for _ in range(convs):
                layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
                c = w
            layers.append(nn.MaxPool2d(2))
            side //= 2
            w *= 2
        self.features = nn.Sequential(*layers)
        head = [nn.Flatten(), nn.Dropout(dropout)]
        flat = c * side * side
        if hidden:
            head += [nn.Linear(flat, hidden), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            flat = hidden
        head.append(nn.Linear(flat, num_classes))
        self.head = nn.Sequential(*head)

    def forward(self, x):
        return self.head(self.features(x.contiguous(memory_format=torch.channels_last)))


class Net1d(nn.Module):
    """A 1-D CNN over [length, channels] sequences: `depth` conv-BN-ReLU blocks of `width` channels,
    each after the first halving the length (its convolution's stride or a max-pool before it),
    then the time axis reduced by a global max or mean, or flattened (a head that sees where along
    the window each feature fired)."""

    def __init__(self, width, depth, kernel, downsample, head, dropout, num_classes, length, channels):
        super().__init__()
        layers, c, n = [], channels, length
        for i in range(depth):
            stride = 2 if i and downsample == "stride" else 1
            if i and downsample == "maxpool":
                layers.append(nn.MaxPool1d(2))
                n //= 2
            layers += [nn.Conv1d(c, width, kernel, stride=stride, padding=kernel // 2, bias=False),
                       nn.BatchNorm1d(width), nn.ReLU(inplace=True)]
            n = (n - 1) // stride + 1  # odd kernels, padded by half: the stride alone shortens it
            c = width
        self.features = nn.Sequential(*layers)
        self.reduce = head
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(c * n if head == "flatten" else c, num_classes))

    def forward(self, x):
        h = self.features(x.transpose(1, 2))
        h = h.flatten(1) if self.reduce == "flatten" else h.amax(2) if self.reduce == "max" else h.mean(2)
        return self.head(h)


AMP = {"on": False}  # set in main(): bf16 autocast where the device computes bf16 natively


def autocast():
    return torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=AMP["on"])


def evaluate(model, data, x_all, y_all, idx):
    model.eval()
    correct = 0
    with torch.no_grad():
        for chunk in idx.split(1000):
            with autocast():
                correct += (model(data.inputs(x_all[chunk])).argmax(1) == y_all[chunk]).sum().item()
    return correct / len(idx)


def latency_ms(model, data, warm=2, repeats=30, seconds=1.0):
    """Milliseconds per example at batch 1, as the runner times a trial (cost.py time_passes):
    warm passes first, then the median of up to `repeats` within `seconds`, on one thread as one
    of the runner's jobs has, in the evaluation's precision and layout."""
    model.eval()
    x = data.inputs(data.x_train[data.val[:1]])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    times = []
    started = time.monotonic()
    try:
        with torch.no_grad():
            for i in range(warm + repeats):
                t = time.perf_counter()
                with autocast():
                    model(x)
                if i >= warm:
                    times.append(1000 * (time.perf_counter() - t))
                if len(times) >= 3 and time.monotonic() - started > seconds:
                    break
    finally:
        torch.set_num_threads(threads)
    times.sort()
    return times[len(times) // 2]


def suggest_optimizer(trial, p):
    """The optimizer's lr and weight decay, in ranges per optimizer."""
    if p["optimizer"] == "sgd":
        p["lr"] = trial.suggest_float("lr_sgd", 1e-2, 3e-1, log=True)
        p["weight_decay"] = trial.suggest_float("wd_sgd", 1e-6, 1e-3, log=True)
    elif p["optimizer"] == "adamw":
        p["lr"] = trial.suggest_float("lr_adam", 3e-4, 1e-2, log=True)
        p["weight_decay"] = trial.suggest_float("wd_adamw", 1e-3, 1e-1, log=True)
    else:
        p["lr"] = trial.suggest_float("lr_adam", 3e-4, 1e-2, log=True)
        p["weight_decay"] = trial.suggest_float("wd_adam", 1e-7, 1e-4, log=True)
    return p


class ImageSpace:
    """The BN-CNN space over images. On the digits' 8x8 images: one or two poolings (8 -> 4 -> 2),
    small batches and more epochs for their 1,007 training images (an epoch is a fraction of a
    second), crops of one pixel and no flip (a mirrored digit is another glyph or none), and no
    training subset (there is nothing to save)."""

    def __init__(self, data, dataset, gpu):
        self.shape, self.num_classes = data.shape, data.num_classes
        digits = dataset == "digits"
        self.widths = [32, 48, 64, 96] if gpu else [16, 24, 32, 48]
        self.stages = (1, 2) if digits else (2, 3)
        self.batches = [32, 64, 128] if digits else [128, 256, 512] if gpu else [64, 128, 256]
        self.epochs = (5, 40) if digits else (2, 20 if gpu else 12)
        self.hflips = [False] if digits else [False, True]
        self.crops = [0, 1] if digits else [0, 2]
        self.subsets = SUBSETS if dataset == "fashion-mnist" else [0]

    def suggest(self, trial):
        p = {
            "width": trial.suggest_categorical("width", self.widths),
            "stages": trial.suggest_int("stages", *self.stages),
            "convs": trial.suggest_int("convs", 1, 2),
            "hidden": trial.suggest_categorical("hidden", [0, 128]),
            "dropout": trial.suggest_float("dropout", 0.0, 0.5),
            "optimizer": trial.suggest_categorical("optimizer", ["adam", "adamw", "sgd"]),
            "batch_size": trial.suggest_categorical("batch_size", self.batches),
            "epochs": trial.suggest_int("epochs", *self.epochs),
            "schedule": trial.suggest_categorical("schedule", ["none", "cosine"]),
            "label_smoothing": trial.suggest_float("label_smoothing", 0.0, 0.15),
            "hflip": trial.suggest_categorical("hflip", self.hflips),
            "crop_padding": trial.suggest_categorical("crop_padding", self.crops),
            "subset": trial.suggest_categorical("subset", self.subsets),
        }
        return suggest_optimizer(trial, p)

    def build(self, p):
        net = Net(p["width"], p["stages"], p["convs"], p["hidden"], p["dropout"], self.num_classes, self.shape[-1], self.shape[0])
        return net.to(DEVICE, memory_format=torch.channels_last)

    def augmentation(self, p):
        return {"hflip": p["hflip"], "crop_padding": p["crop_padding"], "cutout": 0}


class SignalSpace:
    """The 1-D CNN space over signals (Net1d), the swarm's cnn1d template's family: width, depth,
    odd kernel sizes, how each block downsamples and how the time axis is reduced, dropout; the
    images' optimizers, schedules and label smoothing; small batches and 5-40 epochs (an epoch of a
    few thousand sequences takes about a second on a CPU, so that a study of minutes completes a
    dozen trials or more). No augmentation or subset."""

    def __init__(self, data, gpu):
        self.length, self.channels = data.shape
        self.num_classes = data.num_classes
        self.batches = [64, 128, 256, 512] if gpu else [32, 64, 128, 256]

    def suggest(self, trial):
        p = {
            "width": trial.suggest_categorical("width", [32, 48, 64, 96]),
            "depth": trial.suggest_int("depth", 2, 5),
            "kernel": trial.suggest_categorical("kernel", [3, 5, 7, 9]),
            "downsample": trial.suggest_categorical("downsample", ["stride", "maxpool"]),
            "head": trial.suggest_categorical("head", ["max", "mean", "flatten"]),
            "dropout": trial.suggest_float("dropout", 0.0, 0.5),
            "optimizer": trial.suggest_categorical("optimizer", ["adam", "adamw", "sgd"]),
            "batch_size": trial.suggest_categorical("batch_size", self.batches),
            "epochs": trial.suggest_int("epochs", 5, 40),
            "schedule": trial.suggest_categorical("schedule", ["none", "cosine"]),
            "label_smoothing": trial.suggest_float("label_smoothing", 0.0, 0.15),
            "subset": 0,
        }
        return suggest_optimizer(trial, p)

    def build(self, p):
        return Net1d(p["width"], p["depth"], p["kernel"], p["downsample"], p["head"], p["dropout"],
                     self.num_classes, self.length, self.channels).to(DEVICE)

    def augmentation(self, p):
        return None


class Search:
    def __init__(self, data, space, deadline, seed):
        self.data = data
        self.space = space
        self.deadline = deadline  # seconds since T0 after which no training step starts
        self.seed = seed
        self.best_value = -1.0
        self.best_state = None
        self.best_trial = None
        self.best_latency_ms = None
        self.first_epoch_90 = None  # first epoch-end validation accuracy >= TARGET, any trial
        self.first_trial_90 = None  # first completed trial whose final validation accuracy >= TARGET
        self.history = []
        self.pareto = False  # set in main(): a multi-objective study, no pruning
        self.kept = {}  # trial number -> (params, state dict) of completed models, in --pareto mode
        self.max_latency_ms = 0.0  # set in main(): --max-latency-ms, a constraint on the single objective

    def objective(self, trial):
        p = self.space.suggest(trial)
        torch.manual_seed(self.seed * 100003 + trial.number)
        data = self.data
        model = self.space.build(p)
        if self.max_latency_ms:
            latency = latency_ms(model, data)
            trial.set_user_attr("latency_ms", latency)
            trial.set_constraint("latency_ms", latency - self.max_latency_ms)  # feasible at <= 0
            if latency > self.max_latency_ms:
                self.history.append({"number": trial.number, "params": p, "state": "infeasible", "latency_ms": round(latency, 4)})
                raise optuna.TrialPruned()
        params = [q for q in model.parameters() if q.requires_grad]
        if p["optimizer"] == "sgd":
            opt = torch.optim.SGD(params, lr=p["lr"], momentum=0.9, nesterov=True, weight_decay=p["weight_decay"])
        else:
            cls = torch.optim.AdamW if p["optimizer"] == "adamw" else torch.optim.Adam
            opt = cls(params, lr=p["lr"], weight_decay=p["weight_decay"])
        train_idx = data.train_indices(p["subset"])
        n = len(train_idx)
        bs = p["batch_size"]
        steps = n // bs + (1 if n % bs > 1 else 0)  # like the runner: no final batch of one (BatchNorm)
        total = steps * p["epochs"]
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, (lambda s: 0.5 * (1 + math.cos(math.pi * min(1.0, s / total)))) if p["schedule"] == "cosine"
            else (lambda s: 1.0))
        criterion = nn.CrossEntropyLoss(label_smoothing=p["label_smoothing"])
        aug = self.space.augmentation(p)
        record = {"number": trial.number, "params": p, "start_s": round(elapsed(), 1), "val": []}
        self.history.append(record)
        last_epoch_s = 0.0
        try:
            for epoch in range(1, p["epochs"] + 1):
                # An epoch predicted not to fit stops the trial now rather than after the deadline.
                if elapsed() + last_epoch_s > self.deadline:
                    raise BudgetCut()
                e0 = elapsed()
                model.train()
                order = train_idx[torch.randperm(n, device=DEVICE)]
                for step in range(steps):
                    if elapsed() > self.deadline:
                        raise BudgetCut()
                    idx = order[step * bs:(step + 1) * bs]
                    x = data.inputs(data.x_train[idx])
                    if aug and augment.wanted(aug):
                        x = augment.apply(x, aug)
                    with autocast():
                        logits = model(x)
                    loss = criterion(logits.float(), data.y_train[idx])
                    if not math.isfinite(loss.item()):
                        record["state"] = "failed (nan loss)"
                        raise optuna.TrialPruned()
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    sched.step()
                val = evaluate(model, data, data.x_train, data.y_train, data.val)
                last_epoch_s = elapsed() - e0
                record["val"].append(round(val, 4))
                if val >= TARGET and self.first_epoch_90 is None:
                    self.first_epoch_90 = elapsed()
                if self.pareto:
                    continue
                trial.report(val, epoch)
                if epoch < p["epochs"] and trial.should_prune():
                    record["state"] = "pruned"
                    raise optuna.TrialPruned()
        except BudgetCut:
            record["state"] = "cut"
            trial.set_user_attr("budget_cut", True)
            raise optuna.TrialPruned()
        finally:
            record["end_s"] = round(elapsed(), 1)
        record["state"] = "complete"
        if self.pareto:
            n_params = sum(q.numel() for q in model.parameters())
            latency = latency_ms(model, data)
            record.update(n_params=n_params, latency_ms=round(latency, 4))
            self.kept[trial.number] = (p, copy.deepcopy(model.state_dict()))
            return val, n_params, latency
        if val >= TARGET and self.first_trial_90 is None:
            self.first_trial_90 = elapsed()
        if val > self.best_value:
            self.best_value, self.best_trial = val, trial.number
            self.best_latency_ms = trial.user_attrs.get("latency_ms")
            self.best_state = copy.deepcopy(model.state_dict())
            self.best_params = p
        return val


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=1800)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reserve-s", type=float, default=20,
                    help="seconds kept back for the final test evaluation and writing the result")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-amp", action="store_true", help="train in fp32 even where the device computes bf16 natively")
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu", help="auto: the GPU when there is one")
    ap.add_argument("--dataset", choices=["fashion-mnist", "digits", "signal"], default="fashion-mnist",
                    help="digits: scikit-learn's 8x8; signal: the folder --data-dir (bench/signals.py), a 1-D CNN space")
    ap.add_argument("--data-dir", default="", help="Fashion-MNIST's idx files (default: where the runner's loader looks); a signal's folder")
    ap.add_argument("--target", default="label", help="a signal CSV's class column")
    ap.add_argument("--pareto", action="store_true", help="a multi-objective study: validation accuracy vs parameters vs latency per example")
    ap.add_argument("--max-latency-ms", type=float, default=0.0, help="a constrained study: validation accuracy with latency per example at most this")
    args = ap.parse_args()
    global DEVICE
    DEVICE = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu")
    torch.set_num_threads(args.threads)
    if DEVICE.type == "cuda":
        torch.backends.cudnn.benchmark = True
        AMP["on"] = not args.no_amp and torch.cuda.is_bf16_supported()
    else:
        AMP["on"] = not args.no_amp and accel.cpu_bf16()
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    signal = args.dataset == "signal"
    data = Data(DEVICE, args.data_dir, args.dataset, args.target if signal else "")
    loaded_s = elapsed()
    gpu = DEVICE.type == "cuda"
    space = SignalSpace(data, gpu) if signal else ImageSpace(data, args.dataset, gpu)
    search = Search(data, space, args.budget_s - args.reserve_s, args.seed)
    search.pareto = args.pareto
    search.max_latency_ms = args.max_latency_ms
    sampler = optuna.samplers.TPESampler(seed=args.seed, n_startup_trials=5, multivariate=True, group=True)
    if args.pareto:
        study = optuna.create_study(directions=["maximize", "minimize", "minimize"], sampler=sampler)
    else:
        study = optuna.create_study(direction="maximize", sampler=sampler,
                                    pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0))

    def progress(study, trial):
        rec = search.history[-1] if search.history else {}
        print(f"[{elapsed():7.1f}s] trial {trial.number} {rec.get('state', trial.state.name.lower())} "
              f"val {rec.get('val')} best {search.best_value:.4f}", file=sys.stderr, flush=True)
        if elapsed() > search.deadline:
            study.stop()

    study.optimize(search.objective, callbacks=[progress], gc_after_trial=True)
    if args.pareto:
        return write_front(args, study, search, space, data, loaded_s)

    test_accuracy = None
    test_ci95 = None
    best_val = search.best_value if search.best_state is not None else None
    if search.best_state is not None:
        model = space.build(search.best_params)
        model.load_state_dict(search.best_state)
        test_accuracy = evaluate(model, data, data.x_test, data.y_test, data.test)
        test_ci95 = binomial_ci95(test_accuracy, len(data.test))
    states = [r.get("state", "?") for r in search.history]
    result = {
        "method": "optuna",
        "dataset": args.dataset,
        "seed": args.seed,
        "max_latency_ms": args.max_latency_ms or None,
        "best_latency_ms": search.best_latency_ms,
        "budget_s": args.budget_s,
        "best_val_accuracy": best_val,
        "test_accuracy": test_accuracy,
        "test_ci95": test_ci95,
        "best_trial": search.best_trial,
        "best_params": getattr(search, "best_params", None),
        "trials": len(search.history),
        "completed": states.count("complete"),
        "pruned": states.count("pruned"),
        "infeasible": states.count("infeasible"),
        "cut": states.count("cut"),
        "failed": sum(s.startswith("failed") for s in states),
        "seconds_to_90_val_trial": search.first_trial_90,
        "seconds_to_90_val_epoch": search.first_epoch_90,
        "data_load_s": loaded_s,
        "seconds": elapsed(),
        "n_train": len(data.train), "n_val": len(data.val), "n_test": len(data.test),
        "threads": args.threads,
        "device": torch.cuda.get_device_name() if DEVICE.type == "cuda" else "cpu",
        "precision": "bf16" if AMP["on"] else "fp32",
        "optuna": optuna.__version__, "torch": torch.__version__,
        "loadavg": list(os.getloadavg()),
        "history": search.history,
        # The pick as bench/tasks-series.sh reads a peer's models.
        "models": {"optuna_cnn": {"test_accuracy": test_accuracy, "test_ci95": test_ci95, "val_accuracy": best_val,
                                  "config": getattr(search, "best_params", None)}},
    }
    write_result(args.out, result, ("history", "best_params"))


def write_front(args, study, search, space, data, loaded_s):
    """--pareto's result: every trial of the study's front, evaluated once on the test split."""
    front = []
    for t in sorted(study.best_trials, key=lambda t: -t.values[0]):
        p, state = search.kept[t.number]
        model = space.build(p)
        model.load_state_dict(state)
        front.append({"number": t.number, "val_accuracy": t.values[0], "params": int(t.values[1]), "latency_ms": t.values[2],
                      "test_accuracy": evaluate(model, data, data.x_test, data.y_test, data.test), "config": p})
    states = [r.get("state", "?") for r in search.history]
    result = {
        "method": "optuna-pareto", "dataset": args.dataset, "sampler": "TPESampler (multi-objective), no pruning", "seed": args.seed, "budget_s": args.budget_s,
        "front": front, "trials": len(search.history), "completed": states.count("complete"), "cut": states.count("cut"),
        "failed": sum(s.startswith("failed") for s in states), "data_load_s": loaded_s, "seconds": elapsed(),
        "threads": args.threads, "precision": "bf16" if AMP["on"] else "fp32", "optuna": optuna.__version__, "torch": torch.__version__,
        "loadavg": list(os.getloadavg()), "history": search.history,
    }
    write_result(args.out, result, ("history",))


if __name__ == "__main__":
    main()
