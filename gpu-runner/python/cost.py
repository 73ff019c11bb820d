"""What a model costs: its forward pass's FLOPs counted by hooks (a model's summary, a job's
predicted training cost for the CPU lane), and its inference timed where it trained (every
evaluated trial's latency, and the goal's latency limit checked before a seed trains).

Imported by trainer.py, in the job's child process; the model is untrusted, so each pass runs
under a Stage and whatever it does surfaces as that stage's failure label.
"""

import math
import statistics
import time

import torch
import torch.nn as nn

import accel
from failures import Stage, TaskFailure


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


def training_flops(model, data, recipe):
    """The job's predicted FLOPs, for the CPU lane (accel.py), or None where there is no lane to
    choose: one example's forward pass, counted by the summary's hooks, ~3 times per trained
    example (forward and backward) and once per validated one."""
    passes = data.windows * (3 * len(data.train) * recipe["epochs"] + len(data.val) * (recipe["epochs"] + 1))
    if not accel.lane_open(_param_count(model), passes):
        return None
    x = data.batch(data.train[:1])[0]
    _, layers = traced(model, x, f"forward pass on 1 training sample of shape {list(x.shape)}")
    return passes * sum(layer["flops"] for layer in layers)


def inference_cost(model, data, acc, amp_dtype, channels_last, eval_batch, budget):
    """What the trained model costs to run where it trained: milliseconds per forward pass of one
    sample and of an evaluation batch (time_passes, the device synchronised around each pass),
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
            cost[key] = {"batch": n, **time_passes(forward, acc.synchronize, share(timings - i))}
        peak = acc.peak_memory_mb()
        if peak is not None:
            cost[key]["peak_memory_mb"] = peak
    x = data.batch(data.val[:1])[0]
    _, layers = traced(model, x, "counting the FLOPs of one sample's forward pass")
    cost["flops_per_sample"] = sum(layer["flops"] for layer in layers)
    if acc.cuda:
        # Where a model trained on a GPU often runs: one sample on the host's CPU (fp32, the job's
        # threads). The model is not used after this, so it moves rather than being copied.
        model.to("cpu")
        x = x.cpu()
        with Stage("crash", "timing the model's inference on the host's CPU"), torch.no_grad():
            cost["host_cpu_batch_1"] = {"batch": 1, **time_passes(lambda: model(x), lambda: None, share(1))}
    cost["measure_seconds"] = time.monotonic() - started
    return cost


def check_latency(model, data, acc, amp_dtype, channels_last, limit_ms):
    """Stop a seed whose model is clearly over the goal's latency limit before it trains: one
    sample's forward pass timed as inference_cost times it, on the untrained weights (they cost
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
        t = time_passes(forward, acc.synchronize, LIMIT_CHECK_SECONDS)
    if t["min_ms"] > LIMIT_SLACK * limit_ms:
        raise TaskFailure("over_limit", f"{t['min_ms']:.3g} ms per example at batch 1 before training, over the "
                          f"goal's limit of {limit_ms:g} ms by more than {LIMIT_SLACK - 1:.0%}")


def time_passes(run, sync, seconds):
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


# Inference timing (inference_cost), asked of every evaluated trial: INFERENCE_SHARE of the seed's
# time so far for all its timings, so that measuring adds at most about 5% to a cheap probe (the
# rest of that is the MIN_REPEATS floor and the FLOP count), and never more than INFERENCE_SECONDS
# per timing (warm passes included) however long it trained. A model slower than its share gets
# MIN_REPEATS timed passes.
WARM_PASSES = 2
INFERENCE_REPEATS = 30
MIN_REPEATS = 3
INFERENCE_SECONDS = 1.0
INFERENCE_SHARE = 0.03
# The latency limit's check before training (check_latency): a few passes on an idle core take
# tens of milliseconds; a pass timed beside another slot's training can be a fifth slower.
LIMIT_CHECK_SECONDS = 0.2
LIMIT_SLACK = 1.25


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


def traced(model, x, what):
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




def _param_count(model):
    try:
        return sum(p.numel() for p in model.parameters())
    except ValueError:  # a lazy module's parameters have no shape before the first forward
        return 0
