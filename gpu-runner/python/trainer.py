"""What a forked job runs: train one seed of a model, or summarize a model.

Runs in the job's child process, after the zygote has dropped privileges and
set rlimits; the model source is untrusted. Each stage runs under a Stage so
that whatever the model does surfaces as the failure label of that stage.

This process holds no validation or test label: it returns the model's
predictions (log-probabilities, or a regression's values in the target's
units) on those splits, after each epoch and at the end, and the referee
(referee.py) scores them. Training loss and accuracy are measured here, so a
model could misreport them; nothing decides on them.

What differs by task (the targets as learnt, the batches, the output's shape,
the loss, the predictions the referee scores) is the task's learning
(learning/): the loop here names no task.
"""

import contextlib
import inspect
import itertools
import linecache
import math
import os
import random
import statistics
import sys
import time
import traceback
import types

import numpy as np
import torch
import torch.nn as nn

try:
    # torch 2.x optimizers import torch._dynamo at their first step: 4-6 s in every job on a GPU
    # host, and from a prefix the job's uid may be unable to read (a pyenv under /root). Imported
    # here, in the fork server, every job finds it loaded. It starts no thread and touches no GPU.
    import torch._dynamo  # noqa: F401
except ImportError:  # torch 1.x has none
    pass

import accel
import augment
import learning
import metrics
import policy
from datasets import feature_stats
from failures import Stage, TaskFailure, classify, tail

MODEL_FILE = "model.py"


def _seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_model(spec):
    module = types.ModuleType("model")
    module.__file__ = MODEL_FILE
    sys.modules["model"] = module
    source = spec["source"]
    # Registered so tracebacks through the model show its source lines.
    linecache.cache[MODEL_FILE] = (len(source), None, source.splitlines(True), MODEL_FILE)
    with Stage("codegen_error", "compiling the model source"):
        exec(compile(source, MODEL_FILE, "exec"), module.__dict__)
    cls = module.__dict__.get(spec["class_name"])
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        found = sorted(k for k, v in module.__dict__.items()
                       if isinstance(v, type) and issubclass(v, nn.Module) and v.__module__ == "model")
        raise TaskFailure("codegen_error", f"the source defines no nn.Module subclass named "
                          f"{spec['class_name']!r} (nn.Module subclasses found: {', '.join(found) or 'none'})")
    with Stage("codegen_error", f"instantiating {spec['class_name']}"):
        return cls(**spec["init_kwargs"])


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def _check_output(out, expected, dims, where):
    if not isinstance(out, torch.Tensor):
        raise TaskFailure("shape_error", f"{where}: forward returned {type(out).__name__}, "
                          f"expected a tensor of shape {expected} {dims}")
    if list(out.shape) != expected:
        raise TaskFailure("shape_error", f"{where}: forward returned shape {list(out.shape)}, "
                          f"expected {expected} {dims}")


class _Data:
    """The cached arrays as tensors; batches are standardised as they are drawn.

    Made on the CPU, where torch.from_numpy shares the zygote's pages (copy-on-write after
    the fork), so a job starts without copying or converting the dataset; `to` moves it to
    the job's device once its lane is chosen.
    """

    def __init__(self, split, y_train, context):
        raw = split.raw
        self.learning = learning.of(raw.task)
        self.is_text = raw.vocab_size > 0
        self.is_image = raw.x_train.ndim == 4
        self.num_classes = len(raw.class_names)
        self.vocab_size = raw.vocab_size
        # What a task may change (learning/): the examples an epoch draws from each row (a
        # language model's windows of `context` bytes), and the targets' standardisation.
        self.context, self.windows = 0, 1
        self.target_mean, self.target_std = 0.0, 1.0
        y_train = self.learning.prepare(self, y_train, split, context)
        self.x_train = torch.from_numpy(raw.x_train)
        self.y_train = torch.from_numpy(y_train)
        self.x_test = torch.from_numpy(raw.x_test)
        self.train = torch.from_numpy(split.train)
        self.val = torch.from_numpy(split.val)
        self.test = torch.from_numpy(split.test)
        self.mean = self.std = None
        if not self.is_text:
            mean, std = feature_stats(raw.x_train, split.train)
            self.mean, self.std = torch.from_numpy(mean), torch.from_numpy(std)

    def to(self, device):
        for key in ("x_train", "y_train", "x_test", "train", "val", "test", "mean", "std"):
            value = getattr(self, key)
            if value is not None:
                setattr(self, key, value.to(device))
        return self

    def inputs(self, x):
        return x.long() if self.is_text else (x.float() - self.mean) / self.std

    def batch(self, idx):
        """Inputs and targets of the training examples `idx`, as the task draws them."""
        return self.learning.batch(self, idx)

    def check_output(self, out, batch, where):
        _check_output(out, *self.learning.output_shape(self, batch), where)


class _Schedule:
    """The learning rate's multiplier by progress through the training, warmup included.

    Progress is the share of the recipe's steps done; with `train_seconds`, the larger of
    that and the share of the time elapsed since the first step, so a training cut by time
    still warms up, anneals and ends at its schedule's end. The step schedule counts epochs.
    """

    def __init__(self, recipe, steps_per_epoch, base_lr):
        self.base_lr = base_lr
        self.total = recipe["epochs"] * steps_per_epoch
        warmup = int(round(recipe["warmup_epochs"] * steps_per_epoch))
        self.schedule = recipe["schedule"]
        self.start = 0.0
        if self.schedule == "onecycle":
            # torch's OneCycleLR defaults: 30% of the steps rising from lr/25, then cosine to ~0.
            warmup = warmup or max(1, int(0.3 * self.total))
            self.start = 1 / 25
        self.warm = warmup / self.total
        self.step_every = recipe["step_size"] * steps_per_epoch
        self.gamma = recipe["gamma"]
        self.seconds = recipe["train_seconds"]
        self.started = None

    def _progress(self, steps):
        p = steps / self.total
        if self.seconds and self.started is not None:
            p = max(p, (time.monotonic() - self.started) / self.seconds)
        return min(1.0, p)

    def lr(self, steps):
        """The rate of the step after `steps` steps."""
        p = self._progress(steps)
        if p < self.warm:
            return self.base_lr * (self.start + (1 - self.start) * min(1.0, self._progress(steps + 1) / self.warm))
        if self.schedule in ("cosine", "onecycle"):
            return self.base_lr * 0.5 * (1 + math.cos(math.pi * min(1.0, (p - self.warm) / max(1e-12, 1 - self.warm))))
        if self.schedule == "step":
            return self.base_lr * self.gamma ** (steps // self.step_every)
        return self.base_lr

    def out_of_time(self):
        return bool(self.seconds) and self.started is not None and time.monotonic() - self.started >= self.seconds


def _set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr


def _optimizer(model, recipe):
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise TaskFailure("codegen_error", "the model has no trainable parameters")
    if recipe["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=recipe["lr"], momentum=recipe["momentum"],
                               nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"])
    cls = torch.optim.AdamW if recipe["optimizer"] == "adamw" else torch.optim.Adam
    return cls(params, lr=recipe["lr"], weight_decay=recipe["weight_decay"])


class _Ema:
    """An exponential moving average of the weights (Polyak averaging) that evaluation uses.

    One extra copy of the floating-point parameters and buffers: BatchNorm's running
    statistics are averaged like the weights, so they match them roughly. After t
    updates the decay is min(decay, (1 + t) / (10 + t)), so the average forgets the
    initial weights quickly and a short run averages about its last tenth. `swap`
    exchanges the averaged and the trained tensors' storage, without copying.
    """

    def __init__(self, model, decay):
        self.decay = decay
        self.updates = 0
        self.shadow = [t.detach().clone() for t in self._tensors(model)]

    @staticmethod
    def _tensors(model):
        # Looked up each time: a model may replace a buffer instead of updating it in place.
        return [t for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()]

    @torch.no_grad()
    def update(self, model):
        decay = min(self.decay, (1 + self.updates) / (10 + self.updates))
        self.updates += 1
        current = [t.detach() for t in self._tensors(model)]
        try:
            if hasattr(torch, "_foreach_lerp_"):
                torch._foreach_lerp_(self.shadow, current, 1 - decay)
            else:  # torch < 2.0
                torch._foreach_mul_(self.shadow, decay)
                torch._foreach_add_(self.shadow, current, alpha=1 - decay)
        except RuntimeError:
            if [t.shape for t in current] == [t.shape for t in self.shadow]:
                raise
            # The model changed a buffer's shape, or added one: the average starts again.
            self.shadow = [t.clone() for t in current]

    def swap(self, model):
        for t, s in zip(self._tensors(model), self.shadow):
            t.data, s.data = s.data, t.data

    @contextlib.contextmanager
    def applied(self, model):
        """The averaged weights in the model inside the block, the trained ones after it."""
        self.swap(model)
        try:
            yield
        finally:
            self.swap(model)


def _channels_last(model, probe):
    """Whether the model runs in channels-last memory, moved there if it does: oneDNN's and cuDNN's
    convolutions are faster on it (on this project's 2-core CPU, 1.6-2x for the reference CNN's
    epoch). Code that reshapes its activations with .view() cannot run on it, and trains as it is."""
    try:
        # Within the try: a 5-D parameter (Conv3d) has no channels-last layout.
        model.to(memory_format=torch.channels_last)
        with torch.no_grad():
            model(probe.contiguous(memory_format=torch.channels_last))
        return True
    except RuntimeError:
        model.to(memory_format=torch.contiguous_format)
        return False


def _predict(model, data, x_all, idx, batch_size, acc, amp_dtype, channels_last, what):
    """The model's predictions on x_all[idx] as the referee takes them (metrics.encode): the task's
    own (learning/), or its encoding of the model's outputs on batches of the examples."""
    def forward(x):
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with acc.autocast(amp_dtype):
            return model(x).float()

    own = data.learning.predict(model, data, x_all, idx, batch_size, forward, what)
    if own is not None:
        return own
    model.eval()
    with Stage("crash", what), torch.no_grad():
        logits = torch.cat([forward(data.inputs(x_all[chunk])) for chunk in idx.split(batch_size)])
    if not torch.isfinite(logits).all():
        raise TaskFailure("nan_loss", f"{what}: the model's outputs are not all finite")
    return metrics.encode(data.learning.encode(data, logits).cpu().numpy())


def _read_labels(fd):
    with Stage("crash", "reading the training labels"), os.fdopen(fd, "rb") as f:
        return np.load(f, allow_pickle=False)


def _save_weights(model, fd):
    """The weights evaluation sees, written to the file the zygote opened for this job."""
    with Stage("crash", "saving the trained weights"), os.fdopen(fd, "wb") as f:
        torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, f)


def _load_weights(model, fd, device):
    # weights_only: the file is tensors the runner kept, and must not be able to run code.
    with Stage("invalid_config", "loading the kept weights"), os.fdopen(fd, "rb") as f:
        model.load_state_dict(torch.load(f, map_location=device, weights_only=True))


def _param_count(model):
    try:
        return sum(p.numel() for p in model.parameters())
    except ValueError:  # a lazy module's parameters have no shape before the first forward
        return 0


def _training_flops(model, data, recipe):
    """The job's predicted FLOPs, for the CPU lane (accel.py), or None where there is no lane to
    choose: one example's forward pass, counted by the summary's hooks, ~3 times per trained
    example (forward and backward) and once per validated one."""
    passes = data.windows * (3 * len(data.train) * recipe["epochs"] + len(data.val) * (recipe["epochs"] + 1))
    if not accel.lane_open(_param_count(model), passes):
        return None
    x = data.batch(data.train[:1])[0]
    _, layers = _traced(model, x, f"forward pass on 1 training sample of shape {list(x.shape)}")
    return passes * sum(layer["flops"] for layer in layers)


def train(spec, split, emit, t0):
    recipe = spec["recipe"]
    seed = spec["seed"]
    _seed_everything(seed)
    y_train = _read_labels(spec["labels_fd"])
    model = build_model(spec)
    data = _Data(split, y_train, recipe["context"])
    acc = accel.choose(_training_flops(model, data, recipe))
    acc.cap_memory(spec["limits"]["gpu_memory_fraction"])
    with Stage("crash", "moving the dataset to the device"):
        data.to(acc.tensors)
    num_classes = data.num_classes
    amp_dtype = acc.amp_dtype(recipe["amp"])
    channels_last = recipe["channels_last"] and data.is_image
    use_augment = augment.wanted(recipe["augment"]) and data.is_image
    acc.set_determinism(recipe["deterministic"])
    with Stage("crash", "moving the model to the device"):
        model = model.to(acc.tensors)

    probe = data.batch(data.train[:2])[0]
    what = f"forward pass on {len(probe)} training samples of shape {list(probe.shape)}"
    with Stage("shape_error", what):
        model.eval()
        with torch.no_grad():
            out = model(probe)
    data.check_output(out, len(probe), what)
    if channels_last:
        channels_last = _channels_last(model, probe)
    data.learning.check_model(model, data, probe)
    # After the first forward: lazy modules (nn.LazyLinear) have no shape before it.
    params = sum(p.numel() for p in model.parameters())
    if spec["max_params"] and params > spec["max_params"]:
        raise TaskFailure("budget_overrun", f"the model has {params:,} parameters, over the budget of "
                          f"{spec['max_params']:,}")

    loaded = spec["weights"] == "load"
    if spec["max_latency_ms"] and not loaded:
        _check_latency(model, data, acc, amp_dtype, channels_last, spec["max_latency_ms"])
    if loaded:
        _load_weights(model, spec["weights_fd"], acc.tensors)
    optimizer = _optimizer(model, recipe)
    batch_size = min(recipe["batch_size"], len(data.train))
    n_train = len(data.train) * data.windows
    # A final batch of one sample breaks BatchNorm in training mode; it is skipped.
    steps_per_epoch = n_train // batch_size + (1 if n_train % batch_size > 1 else 0)
    schedule = _Schedule(recipe, steps_per_epoch, recipe["lr"])
    steps_done = 0
    _set_lr(optimizer, schedule.lr(0))
    criterion = data.learning.criterion(recipe)
    scaler = acc.grad_scaler(enabled=amp_dtype == torch.float16)
    eval_batch = max(256, batch_size)
    # Validation and test see the averaged weights when there are any, so curves and final metrics agree.
    ema = _Ema(model, recipe["ema_decay"]) if recipe["ema_decay"] > 0 else None
    # The trainer's own curve (the validation curve is the referee's: the runner adds it).
    curve = {key: [] for key in data.learning.curve_keys}
    tracks_accuracy = "train_accuracy" in curve
    seconds_to_first_step = None

    epochs = 0 if loaded else recipe["epochs"]
    for epoch in range(1, epochs + 1):
        model.train()
        order = data.train.repeat(data.windows)[torch.randperm(n_train, device=acc.tensors)]
        loss_sum, seen = 0.0, 0
        correct = torch.zeros((), dtype=torch.long, device=acc.tensors)
        for step in range(1, steps_per_epoch + 1):
            idx = order[(step - 1) * batch_size: step * batch_size]
            x, y = data.batch(idx)
            if use_augment:
                x = augment.apply(x, recipe["augment"])
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with Stage("crash", f"training step {step} of epoch {epoch}"):
                with acc.autocast(amp_dtype):
                    logits = model(x)
                    if epoch == 1 and step == 1:
                        data.check_output(logits, len(y), "forward pass in training mode")
                    loss = criterion(logits.float(), y)
                value = loss.item()
                if not math.isfinite(value):
                    raise TaskFailure("nan_loss", f"the training loss became {value} at epoch {epoch}, "
                                      f"step {step} of {steps_per_epoch}")
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                if recipe["grad_clip"]:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["grad_clip"])
                scaler.step(optimizer)
                scaler.update()
                steps_done += 1
                _set_lr(optimizer, schedule.lr(steps_done))
                if ema:
                    ema.update(model)
            if seconds_to_first_step is None:
                acc.synchronize()
                seconds_to_first_step = time.monotonic() - t0
                schedule.started = time.monotonic()
                emit({"kind": "first_step", "seconds": seconds_to_first_step})
            loss_sum += value * len(y)
            seen += len(y)
            if tracks_accuracy:
                correct += data.learning.correct(logits, y)
            if schedule.out_of_time():
                break

        with ema.applied(model) if ema else contextlib.nullcontext():
            val_predictions = _predict(model, data, data.x_train, data.val, eval_batch, acc, amp_dtype, channels_last,
                                       f"predicting the validation split after epoch {epoch}")
        point = {"train_loss": loss_sum / seen, "lr": optimizer.param_groups[0]["lr"]}
        if tracks_accuracy:
            point["train_accuracy"] = correct.item() / seen
        for key in curve:
            curve[key].append(point[key])
        emit({"kind": "epoch", "seed": seed, "epoch": epoch, "epochs": recipe["epochs"], **point,
              "val_predictions": val_predictions, "seconds": time.monotonic() - t0})
        if schedule.out_of_time():
            epochs = epoch
            break

    if loaded:
        val_predictions = _predict(model, data, data.x_train, data.val, eval_batch, acc, amp_dtype, channels_last,
                                   "predicting the validation split with the loaded weights")
    elif spec["weights"] == "keep":
        with ema.applied(model) if ema else contextlib.nullcontext():
            _save_weights(model, spec["weights_fd"])
    result_metrics = {key: curve[key][-1] for key in ("train_accuracy", "train_loss") if curve.get(key)}
    outputs = {"val_predictions": val_predictions}
    if spec["evaluate_test"]:
        if not len(data.test):
            raise TaskFailure("invalid_config", f"{split.raw.name}: the test split is empty")
        with ema.applied(model) if ema else contextlib.nullcontext():
            outputs["test_predictions"] = _predict(model, data, data.x_test, data.test, eval_batch, acc, amp_dtype,
                                                   channels_last, "predicting the test split")
            outputs.update(data.learning.test_outputs(model, data, acc, seed))
    if spec["measure_inference"]:
        outputs["inference"] = _inference_cost(model, data, acc, amp_dtype, channels_last, eval_batch,
                                               # The test confirmation trains nothing (it loads kept weights)
                                               # and runs once a run: its timings take their full seconds.
                                               3 * INFERENCE_SECONDS if loaded else INFERENCE_SHARE * (time.monotonic() - t0))
    return {
        **outputs,
        "kind": "result", "seed": seed, "metrics": result_metrics,
        "learning_curve": curve,
        "seconds": time.monotonic() - t0,
        "seconds_to_first_step": seconds_to_first_step,
        "epochs_completed": epochs,
        "params": params, "num_classes": num_classes, "class_names": list(split.raw.class_names),
        "device": {**acc.info(), "memory_format": "channels_last" if channels_last else "contiguous",
                   "precision": acc.precision(amp_dtype)},
    }


def _inference_cost(model, data, acc, amp_dtype, channels_last, eval_batch, budget):
    """What the trained model costs to run where it trained: milliseconds per forward pass of one
    sample and of an evaluation batch (_time_passes, the device synchronised around each pass),
    on a GPU the allocator's peak memory over those passes and one sample's pass on the host's
    CPU as well, and the FLOPs of one sample's forward pass (its multiply-accumulates are half of
    them). On validation inputs, after everything else the result holds, so measuring changes
    none of it.

    Every evaluated trial is measured, a short probe too, so the timings share `budget` seconds
    (INFERENCE_SHARE of the seed's time so far): each gets an even share of what is left when it
    starts, at most INFERENCE_SECONDS, and MIN_REPEATS timed passes whatever its share.
    measure_seconds: the wall time all of this took, so that its cost to the job can be checked."""
    started = time.monotonic()
    timings = 3 if acc.cuda else 2

    def share(left):  # seconds for the next timing, `left` of them still to run
        return min(INFERENCE_SECONDS, max(0.0, started + budget - time.monotonic()) / left)

    model.eval()
    cost = {}
    for i, (key, n) in enumerate((("batch_1", 1), ("batch_eval", max(1, min(eval_batch, len(data.val)))))):
        x = data.batch(data.val[:n])[0]
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)

        def forward():
            with acc.autocast(amp_dtype):
                model(x)
        with Stage("crash", f"timing the model's inference at batch {n}"), torch.no_grad():
            acc.reset_peak_memory()
            cost[key] = {"batch": n, **_time_passes(forward, acc.synchronize, share(timings - i))}
        peak = acc.peak_memory_mb()
        if peak is not None:
            cost[key]["peak_memory_mb"] = peak
    x = data.batch(data.val[:1])[0]
    _, layers = _traced(model, x, "counting the FLOPs of one sample's forward pass")
    cost["flops_per_sample"] = sum(layer["flops"] for layer in layers)
    if acc.cuda:
        # Where a model trained on a GPU often runs: one sample on the host's CPU (fp32, the job's
        # threads). The model is not used after this, so it moves rather than being copied.
        model.to("cpu")
        x = x.cpu()
        with Stage("crash", "timing the model's inference on the host's CPU"), torch.no_grad():
            cost["host_cpu_batch_1"] = {"batch": 1, **_time_passes(lambda: model(x), lambda: None, share(1))}
    cost["measure_seconds"] = time.monotonic() - started
    return cost


def _check_latency(model, data, acc, amp_dtype, channels_last, limit_ms):
    """Stop a seed whose model is clearly over the goal's latency limit before it trains: one
    sample's forward pass timed as _inference_cost times it, on the untrained weights (they cost
    what trained ones do), for LIMIT_CHECK_SECONDS. Its fastest pass over the limit by more than
    LIMIT_SLACK is over_limit at once (a slot training beside it only slows a pass); nearer it,
    the judge decides on the trained model's timing, the claim's."""
    x = data.batch(data.val[:1])[0]
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)

    def forward():
        with acc.autocast(amp_dtype):
            model(x)
    model.eval()
    with Stage("crash", "timing the model against the goal's latency limit"), torch.no_grad():
        t = _time_passes(forward, acc.synchronize, LIMIT_CHECK_SECONDS)
    if t["min_ms"] > LIMIT_SLACK * limit_ms:
        raise TaskFailure("over_limit", f"{t['min_ms']:.3g} ms per example at batch 1 before training, over the "
                          f"goal's limit of {limit_ms:g} ms by more than {LIMIT_SLACK - 1:.0%}")


def _time_passes(run, sync, seconds):
    """Milliseconds per call of `run`, warm (WARM_PASSES first), `sync` before and after each: the
    median, 90th percentile and fastest of up to INFERENCE_REPEATS calls, fewer (at least MIN_REPEATS)
    where another would end past `seconds` (warm passes included), as the last one foretells."""
    times = []
    started = time.monotonic()
    for i in range(WARM_PASSES + INFERENCE_REPEATS):
        sync()
        t = time.perf_counter()
        run()
        sync()
        took = time.perf_counter() - t
        if i >= WARM_PASSES:
            times.append(1000 * took)
        if len(times) >= MIN_REPEATS and time.monotonic() - started + took > seconds:
            break
    times.sort()
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))], "min_ms": times[0],
            "repeats": len(times)}


# Inference timing (_inference_cost), asked of every evaluated trial: INFERENCE_SHARE of the seed's
# time so far for all its timings, so that measuring adds at most about 5% to a cheap probe (the
# rest of that is the MIN_REPEATS floor and the FLOP count), and never more than INFERENCE_SECONDS
# per timing (warm passes included) however long it trained. A model slower than its share gets
# MIN_REPEATS timed passes.
WARM_PASSES = 2
INFERENCE_REPEATS = 30
MIN_REPEATS = 3
INFERENCE_SECONDS = 1.0
INFERENCE_SHARE = 0.03
# The latency limit's check before training (_check_latency): a few passes on an idle core take
# tens of milliseconds; a pass timed beside another slot's training can be a fifth slower.
LIMIT_CHECK_SECONDS = 0.2
LIMIT_SLACK = 1.25


# --- summarize ------------------------------------------------------------------------

def _layer_flops(module, inputs, output):
    """2 x multiply-accumulates of conv, linear and attention layers: an estimate.

    Elementwise work, normalisation, pooling and anything done with torch.nn.functional
    on the model's own parameters are not counted.
    """
    out = _first_tensor(output)
    if out is None:
        return 0
    if isinstance(module, nn.modules.conv._ConvNd):
        per_output = (module.in_channels // module.groups) * math.prod(module.kernel_size)
        if module.transposed and inputs and isinstance(inputs[0], torch.Tensor):
            return 2 * inputs[0].numel() * (module.out_channels // module.groups) * math.prod(module.kernel_size)
        return 2 * out.numel() * per_output
    if isinstance(module, nn.Linear):
        return 2 * out.numel() * module.in_features
    if isinstance(module, nn.MultiheadAttention):
        # Forward hooks see positional arguments only; a call with keywords falls back to
        # self-attention shaped like the output.
        query = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) else out
        key = inputs[1] if len(inputs) > 1 and isinstance(inputs[1], torch.Tensor) else query
        if query.dim() == 2:
            batch, length, source = 1, query.shape[0], key.shape[0]
        elif module.batch_first:
            batch, length, source = query.shape[0], query.shape[1], key.shape[1]
        else:
            batch, length, source = query.shape[1], query.shape[0], key.shape[0]
        e = module.embed_dim
        projections = length * e * e + source * module.kdim * e + source * module.vdim * e + length * e * e
        return 2 * batch * (projections + 2 * length * source * e)
    return 0


def _hooked_modules(model):
    """Leaf modules plus whole attention blocks (whose out_proj would otherwise count alone)."""
    inside_attention = set()
    for module in model.modules():
        if isinstance(module, nn.MultiheadAttention):
            inside_attention.update(id(m) for m in module.modules() if m is not module)
    for name, module in model.named_modules():
        if id(module) in inside_attention:
            continue
        if isinstance(module, nn.MultiheadAttention) or not any(True for _ in module.children()):
            yield name or type(module).__name__, module


def _traced(model, x, what):
    """The model's output on x, and per hooked layer its output shape, parameters and FLOPs."""
    layers = []

    def record(name):
        def hook(module, inputs, output):
            out = _first_tensor(output)
            layers.append({"name": name, "type": type(module).__name__,
                           "output_shape": list(out.shape) if out is not None else [],
                           "params": sum(p.numel() for p in module.parameters()),
                           "flops": int(_layer_flops(module, inputs, output))})
        return hook

    handles = [module.register_forward_hook(record(name)) for name, module in _hooked_modules(model)]
    # Gradients stay enabled: under no_grad, eval-mode transformer layers take a fused
    # fast path that never calls their submodules, and their FLOPs would go unseen.
    try:
        with Stage("shape_error", what):
            model.eval()
            out = model(x)
    finally:
        for handle in handles:
            handle.remove()
    return out, layers


# bool first: a bool is an int to isinstance, and type() is exact.
_ARGUMENT_KINDS = {bool: "ARGUMENT_KIND_BOOL", int: "ARGUMENT_KIND_INT", float: "ARGUMENT_KIND_FLOAT"}


def constructor_arguments(cls):
    """The keyword arguments of cls(...) whose default is a finite number or a boolean.

    These are what the built-in brain may change in a model it did not write: a width, a depth,
    a dropout, a flag. Defaults of other types (strings, None, tensors) are left as they are.
    """
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):  # a signature that cannot be read (a C extension's)
        return []
    out = []
    for p in params:
        kind = _ARGUMENT_KINDS.get(type(p.default))
        if kind and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and math.isfinite(p.default):
            out.append({"name": p.name, "kind": kind, "default_value": float(p.default)})
    return out


def summarize(spec):
    _seed_everything(0)
    model = build_model(spec)
    shape = [1] + spec["input_shape"]
    if spec["input_dtype"] == "int64":
        x = torch.randint(1, spec["vocab_size"], shape)
    else:
        x = torch.randn(shape)
    what = f"forward pass on one sample of shape {shape}"
    out, layers = _traced(model, x, what)
    expected = learning.of(spec["task"]).summary_shape(spec)
    if expected:
        _check_output(out, *expected, what)
    elif not isinstance(out, torch.Tensor):
        raise TaskFailure("shape_error", f"forward returned {type(out).__name__}, expected a tensor")
    total = sum(p.numel() for p in model.parameters())
    state_bytes = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    return {
        "kind": "summary", "total_params": total,
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "flops": sum(layer["flops"] for layer in layers),
        "layers": layers, "output_shape": list(out.shape), "size_mb": state_bytes / 2 ** 20,
        "arguments": constructor_arguments(type(model)),
    }


def run(task, spec, split, emit, t0):
    """Runs one task and emits exactly one terminal event, whatever the model does."""
    torch.set_num_threads(spec.get("threads", 1))
    policy.police(emit, MODEL_FILE, os.environ.get("RUNNER_SCRATCH") or os.getcwd())
    try:
        event = train(spec, split, emit, t0) if task == "train" else summarize(spec)
    except TaskFailure as failure:
        event = failure.event()
    except BaseException as exc:  # outside any Stage: a runner bug, or memory running out
        event = {"kind": "failure", "label": classify(exc, "crash"),
                 "message": f"{type(exc).__name__}: {exc}", "traceback": tail(traceback.format_exc())}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    emit(event)
