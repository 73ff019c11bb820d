"""A stand-in for CUDA on a CPU build of torch, as strict as a GPU host about arguments.

torch.cuda's public functions are Python wrappers that check and convert their arguments
(device indices, types, ranges) and then call into torch._C. This stand-in replaces only
that C layer, with functions that check their arguments as the C++ bindings do, so every
torch.cuda call the worker makes runs torch's own wrapper code: a call that a GPU host
would refuse (a device without an index where one is required, a fraction that is not a
float) is refused here too. Tensors stay on the CPU (accel._placement), so the worker's
CUDA path runs end to end on a CPU machine; what the kernels would compute is not checked.

Covers torch 2.x (NVML-based availability, _exchange_device) and 1.13 (set_device).
"""

import contextlib
import types

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import accel


class CudaStandin:
    def __init__(self, name, major, total_memory):
        self.name = name
        self.major = major
        self.total_memory = total_memory
        self.count = 1
        self.current = 0
        self.calls = []
        self.initialised = False

    def called(self, name):
        return [args for call, args in self.calls if call == name]

    def _index(self, what, device, allow_none=False):
        # The C++ bindings take a DeviceIndex: an int (never a bool, a torch.device or None).
        if type(device) is not int:
            raise TypeError(f"{what}(): device must be an int, got {type(device).__name__}")
        if not -1 <= device < self.count:
            raise RuntimeError(f"{what}(): invalid device ordinal {device}")
        return device

    # torch._C and torch.cuda internals, by the names torch's wrappers call

    def device_count(self):
        return self.count

    def lazy_init(self):
        self.initialised = True
        self.calls.append(("init", ()))

    def get_device(self):
        if not self.initialised:
            raise RuntimeError("_cuda_getDevice before CUDA was initialised")
        return self.current

    def exchange_device(self, device):
        self._index("_cuda_exchangeDevice", device)
        previous, self.current = self.current, (device if device >= 0 else self.current)
        return previous

    def set_device(self, device):
        self._index("_cuda_setDevice", device)
        if device >= 0:
            self.current = device

    def properties(self, device):
        self._index("_get_device_properties", device)
        if device < 0:
            raise RuntimeError("_get_device_properties(): invalid device ordinal -1")
        return types.SimpleNamespace(name=self.name, major=self.major, minor=0, total_memory=self.total_memory,
                                     multi_processor_count=132)

    def set_memory_fraction(self, fraction, device):
        if type(fraction) is not float:
            raise TypeError(f"_cuda_setMemoryFraction(): fraction must be a float, got {type(fraction).__name__}")
        self._index("_cuda_setMemoryFraction", device)
        self.calls.append(("set_memory_fraction", (fraction, device)))

    def reset_peak_memory_stats(self, device):
        self._index("_cuda_resetPeakMemoryStats", device)
        if not self.initialised:
            raise RuntimeError("_cuda_resetPeakMemoryStats before CUDA was initialised")
        self.calls.append(("reset_peak_memory_stats", (device,)))

    def memory_stats(self, device):
        # What the caching allocator reports (nested, as the C++ binding returns it); the
        # stand-in allocates nothing on a GPU, so the peak is a fixed value a test can look for.
        self._index("_cuda_memoryStats", device)
        self.calls.append(("memory_stats", (device,)))
        return {"allocated_bytes": {"all": {"current": 0, "peak": self.PEAK_BYTES, "allocated": 0, "freed": 0}}}

    PEAK_BYTES = 96 << 20

    def synchronize(self, *args):
        if args:
            raise TypeError(f"_cuda_synchronize() takes no arguments ({len(args)} given)")
        if not self.initialised:
            raise RuntimeError("_cuda_synchronize before CUDA was initialised")
        self.calls.append(("synchronize", (self.current,)))


def _autocast_dtype():
    """CUDA autocast's dtype where a block has it on, else None (torch 1.13 and 2.x spell it apart)."""
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
    return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


def _cast(value, dtype):
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


class CudaAutocast(TorchFunctionMode):
    """What CUDA's autocast and batch-norm kernel do to the CPU tensors of the stand-in.

    torch.autocast("cuda") casts only CUDA tensors, so on its own it leaves the stand-in's CPU
    tensors in fp32. This mode casts them as CUDA's autocast does (its lower-precision list for
    the ops our models use; its fp32 list for norms, softmax and losses; batch norm in neither,
    so it runs in its input's dtype), above autograd as autocast is, and inside vmap too, where
    CUDA's autocast acts and a CPU's leaves convolutions alone.

    Batch norm on CUDA: cuDNN takes a bf16/fp16 input with fp32 weight and running statistics.
    Inside vmap, functorch's batching rule folds the seeds into the channels and calls the
    kernel with a weight made in the input's dtype, applying the seeds' own weights afterwards;
    CUDA's kernel then treats the parameters as of the input's dtype, and fp32 running
    statistics are refused with the error a real H200 gave.
    """

    LOWER = {torch.conv1d, torch.conv2d, torch.conv3d, F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d,
             F.conv_transpose2d, F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm,
             torch.bmm, torch.addmm, torch.baddbmm, torch.einsum}
    FP32 = {F.layer_norm, F.group_norm, F.softmax, F.log_softmax, torch.softmax, torch.log_softmax,
            torch.Tensor.softmax, torch.Tensor.log_softmax, F.cross_entropy, F.mse_loss, F.nll_loss}
    if hasattr(F, "scaled_dot_product_attention"):
        LOWER.add(F.scaled_dot_product_attention)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        dtype = _autocast_dtype()
        if dtype is not None:
            if func in self.LOWER:
                args, kwargs = _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
            elif func in self.FP32:
                args, kwargs = _cast(args, torch.float32), {k: _cast(v, torch.float32) for k, v in kwargs.items()}
        if func is F.batch_norm:
            self._check_batch_norm(*args, **kwargs)
        return func(*args, **kwargs)

    @staticmethod
    def _check_batch_norm(input, running_mean=None, running_var=None, *args, **kwargs):
        if not (hasattr(torch, "func") and torch._C._functorch.is_batchedtensor(input)):
            return
        if input.dtype in (torch.bfloat16, torch.float16):
            names = {torch.bfloat16: "BFloat16", torch.float16: "Half", torch.float32: "Float"}
            for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
                if stat is not None and stat.dtype != input.dtype:
                    raise RuntimeError(f"Expected {name} to have type {names[input.dtype]} but got {names[stat.dtype]}")


@contextlib.contextmanager
def cuda_standin(monkeypatch, name="NVIDIA H200", major=9, total_memory=143771 << 20):
    """Within the block torch sees one CUDA device of the given name and compute capability."""
    gpu = CudaStandin(name, major, total_memory)
    with monkeypatch.context() as m:
        for target, attr, value in (
            (torch._C, "_cuda_getDeviceCount", gpu.device_count),
            (torch._C, "_cuda_getDevice", gpu.get_device),
            (torch._C, "_cuda_setDevice", gpu.set_device),
            (torch._C, "_cuda_setMemoryFraction", gpu.set_memory_fraction),
            (torch._C, "_cuda_synchronize", gpu.synchronize),
            (torch._C, "_cuda_resetPeakMemoryStats", gpu.reset_peak_memory_stats),
            (torch._C, "_cuda_memoryStats", gpu.memory_stats),
            (torch.cuda.memory, "is_initialized", lambda: gpu.initialised),
            (torch.cuda, "_device_count_nvml", gpu.device_count),
            (torch.cuda, "_cached_device_count", None),
            (torch.cuda, "_lazy_init", gpu.lazy_init),
            (torch.cuda.memory, "_lazy_init", gpu.lazy_init),
            (torch.cuda.random, "_lazy_init", gpu.lazy_init),
            (torch.cuda, "_exchange_device", gpu.exchange_device),
            (torch.cuda, "_maybe_exchange_device", gpu.exchange_device),
            (torch.cuda, "_get_device_properties", gpu.properties),
            (torch.version, "cuda", "13.0"),
            (accel, "_placement", lambda device: torch.device("cpu")),
        ):
            m.setattr(target, attr, value, raising=False)
        # Whatever a test sets, the real values come back with the block's end.
        for flag in ("benchmark", "deterministic"):
            m.setattr(torch.backends.cudnn, flag, getattr(torch.backends.cudnn, flag))
        precision = torch.get_float32_matmul_precision()
        try:
            with CudaAutocast():
                yield gpu
        finally:
            torch.set_float32_matmul_precision(precision)
