"""What a forked job runs: train one seed of a model (or several together: stack.py), or summarize a model.

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
import json
import linecache
import math
import os
import random
import select
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
from cost import INFERENCE_SECONDS, INFERENCE_SHARE, check_latency, inference_cost, traced, training_flops
from datasets import feature_stats
from failures import Stage, TaskFailure, classify, tail
from optim import Ema, Schedule, optimizer_for, set_lr
from stack import Single, Stack, generator

MODEL_FILE = "model.py"
# The smallest batch a job validates and times its inference at (the planner scales timings by it: swarm/budget.ts TIMED_BATCH).
EVAL_BATCH = 256


def _seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def model_class(spec):
    """The nn.Module subclass the model source defines under spec's class name."""
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
    return cls


def build_model(spec, cls=None):
    """The model of spec, of `cls` when the source is compiled already (seeds trained together
    are models of one class)."""
    cls = cls or model_class(spec)
    with Stage("codegen_error", f"instantiating {spec['class_name']}"):
        return cls(**spec["init_kwargs"])


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
        # One example's input as the dataset's description gives it (a language model's row holds one byte more: the last target).
        self.input_shape = self.learning.input_shape(raw)
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

    def preprocessing(self):
        """What `inputs` and the task's target scaling do, for a prediction outside the run (EvalResult)."""
        stats = {} if self.is_text else {"input_mean": self.mean.flatten().tolist(), "input_std": self.std.flatten().tolist()}
        return {"input_shape": self.input_shape, **stats,
                "target_mean": float(self.target_mean), "target_std": float(self.target_std)}

    def batch(self, idx):
        """Inputs and targets of the training examples `idx`, as the task draws them."""
        return self.learning.batch(self, idx)

    def check_output(self, out, batch, where):
        _check_output(out, *self.learning.output_shape(self, batch), where)


class _BestEpoch:
    """Each seed's weights and validation predictions at its best validation epoch, which the
    seed ends with instead of its last: a long training that overfits a small table (a
    200-epoch regression whose validation RMSE bottomed at epoch 81-120, then rose 8%) keeps
    what it had at its best, so training longer never makes a model worse than it was.

    The trainer has no validation labels (the referee holds them), so it cannot tell which epoch
    was best: the runner scores each epoch's predictions and answers, per seed and epoch, whether
    it is the best so far (the zygote passes the verdicts on over `fd`). A snapshot waits for its
    verdict; beyond PENDING of them a seed's training waits, and at its end it waits for the last
    ones, VERDICT_WAIT_S at most each time: without an answer it keeps its last epoch, as a job
    without a runner to answer (no `fd`) does.
    """

    PENDING = 2
    VERDICT_WAIT_S = 30.0

    def __init__(self, fd, seeds):
        self.fd = fd
        self.buffer = b""
        self.pending = {seed: {} for seed in seeds}
        self.best = {seed: None for seed in seeds}

    def offer(self, seed, epoch, snapshot, predictions):
        """Epoch `epoch` of `seed` was predicted: `snapshot()` gives its weights, if kept."""
        if self.fd is None:
            return
        self.pending[seed][epoch] = (snapshot(), predictions)
        self._read(0)
        while self.fd is not None and len(self.pending[seed]) > self.PENDING:
            self._read(self.VERDICT_WAIT_S)

    def kept(self, seed, last_epoch):
        """(epoch, weights, validation predictions) of `seed`'s best epoch when it is not its last, else None."""
        while self.fd is not None and any(self.pending.values()):
            self._read(self.VERDICT_WAIT_S)
        best = self.best.get(seed)
        return best if best is not None and best[0] != last_epoch else None

    def _read(self, timeout):
        if not select.select([self.fd], [], [], timeout)[0]:
            return self._give_up() if timeout else None
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            return self._give_up()
        *lines, self.buffer = (self.buffer + chunk).split(b"\n")
        for line in lines:
            verdict = json.loads(line)
            entry = self.pending.get(verdict["seed"], {}).pop(verdict["epoch"], None)
            if entry is not None and verdict["best"]:
                self.best[verdict["seed"]] = (verdict["epoch"], *entry)

    def _give_up(self):
        # Later epochs went unjudged: none is known to be worse than the best so far, so the last stands.
        self.fd = None
        self.best = {seed: None for seed in self.best}


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


def _save_weights(models, fds):
    """The weights evaluation sees, each seed's written to the file the zygote opened for it."""
    with Stage("crash", "saving the trained weights"):
        for model, fd in zip(models, fds):
            with os.fdopen(fd, "wb") as f:
                torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, f)


def _load_weights(model, fd, device, what="the kept weights"):
    # weights_only: the file is tensors the runner kept, and must not be able to run code.
    with Stage("invalid_config", f"loading {what}"), os.fdopen(fd, "rb") as f:
        model.load_state_dict(torch.load(f, map_location=device, weights_only=True))


def train(spec, split, emit, t0):
    job = _Training(spec, split, emit, t0)
    if job.apart:
        return {"kind": "apart", "reason": job.apart}
    job.fit()
    job.keep_best()
    return job.results()


class _Training:
    """One training job, seed by seed or its seeds together: built and checked when made, then
    fit() trains it epoch by epoch, keep_best() takes each seed's best epoch's weights, and
    results() predicts with them and says what the job did."""

    def __init__(self, spec, split, emit, t0):
        self.spec, self.split, self.emit, self.t0 = spec, split, emit, t0
        self.recipe = recipe = spec["recipe"]
        self.seeds = [spec["seed"] + i for i in range(spec["together"])]
        cpu_states = self._build()
        self._check()
        self.apart = None
        self.loaded = loaded = spec["weights"] == "load"
        # What predicts: the model, or with test-time flip averaging its two passes (the latency
        # limit and the inference timings count both).
        self.evaluated = _FlipAveraged if recipe["tta_hflip"] and self.data.is_image else (lambda m: m)
        if spec["max_latency_ms"] and not loaded:
            check_latency(self.evaluated(self.model), self.data, self.acc, self.amp_dtype, self.channels_last,
                           spec["max_latency_ms"])
        if loaded:
            _load_weights(self.model, spec["weights_fds"][0], self.acc.tensors)
        self.criterion = self.data.learning.criterion(recipe)
        self.scaler = self.acc.grad_scaler(enabled=self.amp_dtype == torch.float16)
        if len(self.seeds) == 1:
            self.trainee = Single(self.model)
        else:
            stacked = Stack.of(self.models, self.data, self.probe, self.criterion, self.amp_dtype, self.acc,
                               self.scaler.is_enabled())
            if isinstance(stacked, str):
                self.apart = stacked
                return
            self.trainee = stacked
        self._plan(cpu_states)

    def _build(self):
        """The seeds' models, the data and the device; each seed's CPU generator state after its model."""
        spec, recipe, seeds = self.spec, self.recipe, self.seeds
        _seed_everything(seeds[0])
        y_train = _read_labels(spec["labels_fd"])
        model = build_model(spec)
        self.data = data = _Data(self.split, y_train, recipe["context"])
        # Each seed's initialisation from its own seed, and the CPU generator's state after it: where
        # the seed's data order and augmentation draws start when it trains alone.
        models, cpu_states = [model], [torch.get_rng_state()]
        for seed in seeds[1:]:
            _seed_everything(seed)
            models.append(build_model(spec, type(model)))
            cpu_states.append(torch.get_rng_state())
        flops = training_flops(model, data, recipe)
        self.acc = acc = accel.choose(flops and flops * len(seeds))
        acc.cap_memory(spec["limits"]["gpu_memory_fraction"])
        with Stage("crash", "moving the dataset to the device"):
            data.to(acc.tensors)
        self.amp_dtype = acc.amp_dtype(recipe["amp"])
        # Seeds together train in the contiguous layout: a stacked input has no channels-last form.
        self.channels_last = recipe["channels_last"] and data.is_image and len(seeds) == 1
        self.use_augment = augment.wanted(recipe["augment"]) and data.is_image
        acc.set_determinism(recipe["deterministic"])
        with Stage("crash", "moving the model to the device"):
            self.models = [m.to(acc.tensors) for m in models]
        self.model = self.models[0]
        return cpu_states

    def _check(self):
        """The model's output on two training examples, its parameters against the budget, and a
        continued training's weights loaded into each seed's model."""
        data, model, spec = self.data, self.model, self.spec
        self.probe = probe = data.batch(data.train[:2])[0]
        what = f"forward pass on {len(probe)} training samples of shape {list(probe.shape)}"
        with Stage("shape_error", what):
            model.eval()
            with torch.no_grad():
                out = model(probe)
        data.check_output(out, len(probe), what)
        if self.channels_last:
            self.channels_last = _channels_last(model, probe)
        # After the first forward: lazy modules (nn.LazyLinear) have no shape before it.
        self.params = params = sum(p.numel() for p in model.parameters())
        if spec["max_params"] and params > spec["max_params"]:
            raise TaskFailure("budget_overrun", f"the model has {params:,} parameters, over the budget of "
                              f"{spec['max_params']:,}")
        # A continued training (EvaluateRequest.init_weights): each seed from its own kept weights.
        for m, fd in zip(self.models, spec.get("init_fds", ())):
            _load_weights(m, fd, self.acc.tensors, "the weights to start from")
        # After the weights to start from: what a model counts is of this job's training examples.
        # Loaded weights (a test confirmation) hold their counts.
        if spec["weights"] != "load":
            data.learning.count(self.models, data)
        data.learning.check_model(model, data, probe)

    def _plan(self, cpu_states):
        """The optimizer, the schedule over the job's steps, the weight average, each seed's draws and curves."""
        recipe, data, seeds = self.recipe, self.data, self.seeds
        self.optimizer = optimizer_for(self.trainee.parameters(), recipe)
        self.batch_size = min(recipe["batch_size"], len(data.train))
        self.n_train = n_train = len(data.train) * data.windows
        # A final batch of one sample breaks BatchNorm in training mode; it is skipped.
        self.steps_per_epoch = n_train // self.batch_size + (1 if n_train % self.batch_size > 1 else 0)
        self.schedule = Schedule(recipe, self.steps_per_epoch, recipe["lr"])
        self.steps_done = 0
        set_lr(self.optimizer, self.schedule.lr(0))
        self.eval_batch = max(EVAL_BATCH, self.batch_size)
        # Validation and test see the averaged weights when there are any, so curves and final metrics agree.
        self.ema = ema = (Ema(self.trainee, recipe["ema_decay"]) if recipe["ema_decay"] > 0
                          else Ema(self.trainee) if recipe["swa"] else None)
        self.averaged = (lambda: ema.applied(self.trainee)) if ema else contextlib.nullcontext
        # Each seed's random draws on the device (data order, augmentation): torch's global generator
        # alone, as it always has; seeds together, a generator each that starts where the global one
        # would for that seed alone. Dropout inside a stacked forward pass draws for all seeds at once.
        self.draws = [None] if len(seeds) == 1 else [generator(self.acc, seed, state) for seed, state in zip(seeds, cpu_states)]
        # The trainer's own curve per seed (the validation curve is the referee's: the runner adds it).
        self.curves = [{key: [] for key in data.learning.curve_keys} for _ in seeds]
        self.tracks_accuracy = "train_accuracy" in self.curves[0]
        self.seconds_to_first_step = None
        self.val_predictions = [None] * len(seeds)
        self.eval_seconds = [0.0] * len(seeds)
        self.best = _BestEpoch(self.spec.get("verdict_fd"), seeds)

    def fit(self):
        """Trains every epoch the recipe asks for, or until its clock (train_seconds) runs out."""
        self.epochs = 0 if self.loaded else self.recipe["epochs"]
        for epoch in range(1, self.epochs + 1):
            self._epoch(epoch)
            self._validate(epoch)
            if self.schedule.out_of_time():
                self.epochs = epoch
                break

    def _epoch(self, epoch):
        trainee, data, acc = self.trainee, self.data, self.acc
        trainee.train()
        orders = [data.train.repeat(data.windows)[torch.randperm(self.n_train, device=acc.tensors, generator=g)]
                  for g in self.draws]
        self.loss_sums, self.seen = [0.0] * len(self.seeds), 0
        self.correct = [torch.zeros((), dtype=torch.long, device=acc.tensors) for _ in self.seeds]
        for step in range(1, self.steps_per_epoch + 1):
            self._step(epoch, step, orders)
            if self.schedule.out_of_time():
                break
        if self.recipe["swa"]:
            self.ema.update(trainee)

    def _step(self, epoch, step, orders):
        recipe, trainee, data, optimizer, scaler = self.recipe, self.trainee, self.data, self.optimizer, self.scaler
        xs, ys = [], []
        for order, g in zip(orders, self.draws):
            x, y = data.batch(order[(step - 1) * self.batch_size: step * self.batch_size])
            if self.use_augment:
                x = augment.apply(x, recipe["augment"], g)
            xs.append(x)
            ys.append(y)
        x = trainee.stack(xs)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with Stage("crash", f"training step {step} of epoch {epoch}"):
            with self.acc.autocast(self.amp_dtype):
                logits = trainee.unstack(trainee(x))
                if epoch == 1 and step == 1:
                    for out, y in zip(logits, ys):
                        data.check_output(out, len(y), "forward pass in training mode")
                losses = [self.criterion(out.float(), y) for out, y in zip(logits, ys)]
            values = trainee.values(losses)
            for i, value in enumerate(values):
                if not math.isfinite(value):
                    raise TaskFailure("nan_loss", f"the training loss became {value} at epoch {epoch}, "
                                      f"step {step} of {self.steps_per_epoch}" + trainee.which(self.seeds[i]))
            optimizer.zero_grad(set_to_none=True)
            # Seeds' losses are independent: the sum's gradient is each seed's own.
            scaler.scale(sum(losses)).backward()
            if recipe["grad_clip"]:
                scaler.unscale_(optimizer)
                trainee.clip(recipe["grad_clip"])
            scaler.step(optimizer)
            scaler.update()
            self.steps_done += 1
            set_lr(optimizer, self.schedule.lr(self.steps_done))
            if self.ema and not recipe["swa"]:
                self.ema.update(trainee)
        if self.seconds_to_first_step is None:
            self.acc.synchronize()
            self.seconds_to_first_step = time.monotonic() - self.t0
            # The clock (train_seconds) counts from the job's start: the planner budgets a job's
            # wall time, and a start-up slower than the one it measured (spare workers starting
            # beside it, a language model counting the whole split) shortens the training rather
            # than running the job past the run's budget.
            self.schedule.started = self.t0
            self.emit({"kind": "first_step", "seconds": self.seconds_to_first_step})
        self.seen += len(ys[0])
        for i, (out, y, value) in enumerate(zip(logits, ys, values)):
            self.loss_sums[i] += value * len(y)
            if self.tracks_accuracy:
                self.correct[i] += data.learning.correct(out, y)

    def _validate(self, epoch):
        """Each seed's validation predictions after the epoch, offered as its best so far, and its curves' point."""
        data = self.data
        for i, seed in enumerate(self.seeds):
            with self.averaged():
                seed_model = self.trainee.model(i)
                started = time.monotonic()
                self.val_predictions[i] = _predict(self.evaluated(seed_model), data, data.x_train, data.val, self.eval_batch,
                                                   self.acc, self.amp_dtype, self.channels_last,
                                                   f"predicting the validation split after epoch {epoch}")
                self.eval_seconds[i] = time.monotonic() - started
                self.best.offer(seed, epoch, lambda: {k: v.detach().to("cpu", copy=True) for k, v in seed_model.state_dict().items()},
                                self.val_predictions[i])
            point = {"train_loss": self.loss_sums[i] / self.seen, "lr": self.optimizer.param_groups[0]["lr"]}
            if self.tracks_accuracy:
                point["train_accuracy"] = self.correct[i].item() / self.seen
            for key in self.curves[i]:
                self.curves[i][key].append(point[key])
            self.emit({"kind": "epoch", "seed": seed, "epoch": epoch, "epochs": self.recipe["epochs"], **point,
                       "val_predictions": self.val_predictions[i], "seconds": time.monotonic() - self.t0})

    def keep_best(self):
        """Each seed's weights of its best validation epoch, where an earlier one beat its last; the
        loaded weights' validation predictions; the weights kept where the job asks."""
        seeds, trainee = self.seeds, self.trainee
        self.kept_epochs = [self.epochs] * len(seeds)
        kept = [self.best.kept(seed, self.epochs) for seed in seeds] if not self.loaded else [None] * len(seeds)
        if any(kept):
            # The averaged weights become the trained ones: each snapshot is of what was evaluated.
            if self.ema:
                self.ema.swap(trainee)
                self.averaged = contextlib.nullcontext
            for i, k in enumerate(kept):
                if k:
                    self.kept_epochs[i], state, self.val_predictions[i] = k
                    trainee.load(i, {name: t.to(self.acc.tensors) for name, t in state.items()})
        if self.loaded:
            data = self.data
            started = time.monotonic()
            self.val_predictions[0] = _predict(self.evaluated(self.model), data, data.x_train, data.val, self.eval_batch,
                                               self.acc, self.amp_dtype, self.channels_last,
                                               "predicting the validation split with the loaded weights")
            self.eval_seconds[0] = time.monotonic() - started
        elif self.spec["weights"] == "keep":
            with self.averaged():
                _save_weights([trainee.model(i) for i in range(len(seeds))], self.spec["weights_fds"])

    def results(self):
        results = [self._result(i, seed) for i, seed in enumerate(self.seeds)]
        if len(self.seeds) == 1:
            return results[0]
        # Seeds together: each seed's result as it would end a job of its own, then the job's end.
        for result in results:
            self.emit({**result, "kind": "seed_result"})
        return {"kind": "result", "seeds": self.seeds}

    def _result(self, i, seed):
        data, acc, amp_dtype, channels_last = self.data, self.acc, self.amp_dtype, self.channels_last
        outputs = {"val_predictions": self.val_predictions[i]}
        if self.spec["evaluate_test"]:
            if not len(data.test):
                raise TaskFailure("invalid_config", f"{self.split.raw.name}: the test split is empty")
            with self.averaged():
                seed_model = self.trainee.model(i)
                outputs["test_predictions"] = _predict(self.evaluated(seed_model), data, data.x_test, data.test, self.eval_batch,
                                                       acc, amp_dtype, channels_last, "predicting the test split")
                outputs.update(data.learning.test_outputs(seed_model, data, acc, seed))
        if self.spec["measure_inference"]:
            outputs["inference"] = inference_cost(self.evaluated(self.trainee.model(i)), data, acc, amp_dtype, channels_last,
                                                   self.eval_batch,
                                                   # The test confirmation trains nothing (it loads kept weights)
                                                   # and runs once a run: its timings take their full seconds.
                                                   # Seeds together share their job's share.
                                                   3 * INFERENCE_SECONDS if self.loaded else
                                                   INFERENCE_SHARE * (time.monotonic() - self.t0) / len(self.seeds))
        curve = self.curves[i]
        return {
            **outputs,
            "kind": "result", "seed": seed,
            "metrics": {key: curve[key][-1] for key in ("train_accuracy", "train_loss") if curve.get(key)},
            "learning_curve": curve,
            "seconds": time.monotonic() - self.t0,
            "seconds_to_first_step": self.seconds_to_first_step,
            "epochs_completed": self.epochs,
            "kept_epoch": self.kept_epochs[i],
            "eval_seconds": self.eval_seconds[i],
            "params": self.params, "num_classes": data.num_classes, "class_names": list(self.split.raw.class_names),
            **data.preprocessing(),
            "device": {**acc.info(), "memory_format": "channels_last" if channels_last else "contiguous",
                       "precision": acc.precision(amp_dtype)},
        }


class _FlipAveraged(nn.Module):
    """A model as test-time flip averaging evaluates it (recipe.tta_hflip): the logits of each
    image and of its mirror, averaged in fp32. A view of the model, not a copy: it predicts with
    whatever weights the model holds (the averaged ones inside Ema.applied)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return (self.model(x).float() + self.model(x.flip(-1)).float()) / 2


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
    out, layers = traced(model, x, what)
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
