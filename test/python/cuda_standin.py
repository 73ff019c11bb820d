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
            yield gpu
        finally:
            torch.set_float32_matmul_precision(precision)
