"""How a job's weights move: the optimizer a recipe names, its learning rate by progress through
the training (warmup, then constant, cosine, one-cycle or steps), and the weights' moving average
that evaluation uses (exponential or stochastic weight averaging)."""

import contextlib
import itertools
import math
import time

import torch

from failures import TaskFailure


class Schedule:
    """The learning rate's multiplier by progress through the training, warmup included.

    Progress is the share of the recipe's steps done; with `train_seconds`, the larger of
    that and the share of the time elapsed since `started` (the job's start), so a training cut by time
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


def set_lr(optimizer, lr):
    for group in optimizer.param_groups:
        group["lr"] = lr


def optimizer_for(params, recipe):
    params = [p for p in params if p.requires_grad]
    if not params:
        raise TaskFailure("codegen_error", "the model has no trainable parameters")
    if recipe["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=recipe["lr"], momentum=recipe["momentum"],
                               nesterov=recipe["nesterov"], weight_decay=recipe["weight_decay"])
    cls = torch.optim.AdamW if recipe["optimizer"] == "adamw" else torch.optim.Adam
    return cls(params, lr=recipe["lr"], weight_decay=recipe["weight_decay"])


class Ema:
    """A moving average of the weights that evaluation uses: exponential (Polyak averaging,
    updated each step) or, with decay None, the plain mean of the weights it is given
    (stochastic weight averaging, updated at each epoch's end).

    One extra copy of the floating-point parameters and buffers: BatchNorm's running
    statistics are averaged like the weights, so they match them roughly (for the mean,
    torch's AveragedModel(use_buffers=True); a pass over the training data to recompute
    them would cost a third of an epoch each time). After t exponential updates the decay
    is min(decay, (1 + t) / (10 + t)), so the average forgets the initial weights quickly
    and a short run averages about its last tenth; the mean's t-th update weighs 1/(t + 1),
    so the starting weights never count. `swap` exchanges the averaged and the trained
    tensors' storage, without copying.
    """

    def __init__(self, model, decay=None):
        self.decay = decay
        self.updates = 0
        self.shadow = [t.detach().clone() for t in self._tensors(model)]

    @staticmethod
    def _tensors(model):
        # Looked up each time: a model may replace a buffer instead of updating it in place.
        return [t for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()]

    @torch.no_grad()
    def update(self, model):
        decay = self.updates / (1 + self.updates) if self.decay is None else min(self.decay, (1 + self.updates) / (10 + self.updates))
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
