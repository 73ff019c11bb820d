"""A job's seeds trained together (EvaluateRequest.seeds_at_once on a GPU, gpu-runner --seeds
together): one process, one device context, each parameter and buffer stacked on a leading seed
dimension and the forward pass vmapped over it (Stack); Single is one seed's model as the same
training loop drives it. Each seed keeps what it would have alone: its initialisation, its data
order and augmentation draws (generator), its gradient clipping, its kept weights."""

import copy
import itertools

import torch
import torch.nn as nn

from failures import classify


def generator(acc, seed, cpu_state):
    """A generator on the job's device that draws what the global one would for `seed` alone when
    training starts: on the CPU from the state its model's initialisation left, on a GPU fresh from
    the seed (torch.manual_seed seeds both, and a model initialises on the CPU)."""
    g = torch.Generator(device=acc.tensors)
    if acc.tensors.type == "cpu":
        g.set_state(cpu_state)
    else:
        g.manual_seed(seed)
    return g


class Single:
    """One seed's model as the training loop drives it: the model itself."""

    def __init__(self, model):
        self.module = model

    def __call__(self, x):
        return self.module(x)

    def parameters(self):
        return self.module.parameters()

    def buffers(self):
        return self.module.buffers()

    def train(self):
        self.module.train()

    def model(self, i):
        return self.module

    def load(self, i, state):
        self.module.load_state_dict(state)

    @staticmethod
    def stack(xs):
        return xs[0]

    @staticmethod
    def unstack(out):
        return [out]

    @staticmethod
    def values(losses):
        return [losses[0].item()]

    @staticmethod
    def which(seed):
        return ""

    def clip(self, max_norm):
        torch.nn.utils.clip_grad_norm_(self.module.parameters(), max_norm)


class Stack:
    """Seeds' models of one architecture trained as one (torch.func): each parameter and buffer
    stacked on a leading seed dimension, the forward pass vmapped over it, so that a GPU runs the
    seeds' kernels as one batch K times larger, in one process and one CUDA context. The
    optimizers (SGD, Adam, AdamW), the EMA and the schedule act elementwise, so each slice
    follows its seed alone; gradient clipping is per seed. `model(i)` writes slice i into seed i's
    own module, for what is done per seed (predictions, timing, the saved weights)."""

    def __init__(self, models):
        self.models = models
        for m in models:  # stack_module_state asks one mode of all; the loop sets it on `base`
            m.train()
        self.params, self.buffers_ = torch.func.stack_module_state(models)
        # The module's structure without its tensors: functional_call supplies each seed's. Each
        # tensor has one meta twin (deepcopy's memo), so weights tied in the model (a language
        # model's head and embedding) stay tied, as functional_call needs; .to("meta") untied them.
        memo = {id(t): (nn.Parameter(t.to("meta"), t.requires_grad) if isinstance(t, nn.Parameter) else t.to("meta"))
                for t in itertools.chain(models[0].parameters(), models[0].buffers())}
        self.base = copy.deepcopy(models[0], memo)
        for m in self.base.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                batch_norm_in_stats_dtype(m)

    @classmethod
    def of(cls, models, data, probe, criterion, amp_dtype, acc, scaled):
        """The stack, or why these models train apart: fp16's loss scaling would skip every seed's
        step for one seed's overflow; torch 1.x has no torch.func; and a model that vmap cannot
        run (data-dependent control flow, .item(), in-place writes to a captured tensor), or
        whose stacked seeds overfill the memory, fails its first stacked step here, on copies,
        before anything trains."""
        if scaled:
            return "fp16 loss scaling would skip every seed's step for one seed's overflow"
        if not hasattr(torch, "func"):
            return f"torch {torch.__version__} has no torch.func"
        recurrent = next((type(m).__name__ for m in models[0].modules() if isinstance(m, nn.RNNBase)), None)
        if recurrent:
            # vmap has no batching rule for aten::gru/lstm; a loop of cells would batch, but one
            # fused cuDNN kernel a seed, a process each, is the faster way to train a recurrent net.
            return f"a recurrent layer ({recurrent}) has no batched form: its fused kernel trains a seed a process"
        try:
            trial = cls([copy.deepcopy(m) for m in models[:2]])
            trial.train()
            x = torch.stack([probe, probe])
            with acc.autocast(amp_dtype):
                out = trial(x)
                y = data.batch(data.train[:2])[1]
                loss = sum(criterion(o.float(), y) for o in out.unbind(0))
            loss.backward()
        except Exception as exc:  # whatever vmap refuses, the model still trains seed by seed
            why = "the seeds ran out of memory together" if classify(exc, "crash") == "oom" else "vmap cannot run the model"
            return f"{why}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        return cls(models)

    def __call__(self, x):
        def one(params, buffers, xi):
            return torch.func.functional_call(self.base, (params, buffers), (xi,))
        return torch.func.vmap(one, randomness="different")(self.params, self.buffers_, x)

    def parameters(self):
        return self.params.values()

    def buffers(self):
        return self.buffers_.values()

    def train(self):
        self.base.train()

    @torch.no_grad()
    def model(self, i):
        module = self.models[i]
        for name, t in itertools.chain(module.named_parameters(), module.named_buffers()):
            stacked = self.params.get(name, self.buffers_.get(name))
            t.copy_(stacked[i])
        return module

    @torch.no_grad()
    def load(self, i, state):
        """Seed i's weights from a state dict of its module (an alias of a tied weight is not stacked)."""
        for name, value in state.items():
            stacked = self.params.get(name, self.buffers_.get(name))
            if stacked is not None:
                stacked[i].copy_(value)

    @staticmethod
    def stack(xs):
        return torch.stack(xs)

    @staticmethod
    def unstack(out):
        return out.unbind(0)

    @staticmethod
    def values(losses):
        return torch.stack([loss.detach() for loss in losses]).tolist()

    @staticmethod
    def which(seed):
        return f" (seed {seed}, trained with others)"

    @torch.no_grad()
    def clip(self, max_norm):
        """clip_grad_norm_ of each seed's slice, as it would clip that seed alone."""
        grads = [p.grad for p in self.params.values() if p.grad is not None]
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).norm(dim=0)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))


def batch_norm_in_stats_dtype(module):
    """Batch norm of a stacked model in its running statistics' dtype (fp32), its output back in
    its input's. Under autocast a batch norm's input is bf16 or fp16 and its statistics fp32,
    which cuDNN takes for one model. Inside vmap, functorch's batching rule calls the kernel with
    a weight made in the input's dtype, and CUDA's kernel then refuses fp32 statistics
    ("Expected running_mean to have type BFloat16 but got Float", on an H200): every batch-norm
    model's seeds trained apart. In fp32 the kernel sees one dtype, and the step computes what
    cuDNN does for a seed alone (statistics in fp32, the output in the input's dtype)."""
    forward = type(module).forward

    def run(x):
        stats = module.running_mean
        if stats is None or x.dtype == stats.dtype:
            return forward(module, x)
        return forward(module, x.to(stats.dtype)).to(x.dtype)

    module.forward = run
