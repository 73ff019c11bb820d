"""Where a job trains, and every call into torch.cuda that the worker makes.

The CUDA calls live here, and only here, so that one CPU test (test/python/test_accel.py)
runs each of them through torch's own Python wrappers over a stand-in for CUDA's C layer:
the wrappers check their arguments as they do on a GPU host. Without that, a
`torch.device("cuda")` with no index, refused by torch 2.11's
set_per_process_memory_fraction, crashed every job on the first real GPU.

Two policies, from measurements on an H200 (docs/BENCHMARKS.md, "GPU"):

- the CPU lane: CUDA's context and first kernels cost a job about a second, more than a
  tiny job's whole training on one CPU core, so a job whose training is predicted below
  CPU_LANE_FLOPS never touches the GPU (the seed documents' three cases: 0.25-0.28 s warm
  to the first step);
- no cuDNN autotuning: its timing runs cost 3-4 s of a job's first step (0.84-0.92 s
  without), and untuned ResNet-9 trained at 1.81 s an epoch with three seeds sharing the
  GPU, against 2.54 s measured with autotuning in an earlier session: nothing it would
  pay back was seen.

And one from a CPU: a mixed-precision recipe trains in bf16 on a CPU that computes it natively
(AVX512-BF16 or AMX: AMD Zen 4 on, Intel Cooper Lake and Sapphire Rapids on), where the
VGG-style template's training step took 0.57 of its fp32 time on one core of a 2-core AMD EPYC
with torch 2.13 (docs/BENCHMARKS.md); elsewhere bf16 is emulated and slower, and the job trains
in fp32. What it trained in is the job's `device.precision`.
"""

import contextlib
import os

import torch

# Training FLOPs (about 3x the forward pass's, per example and epoch) below which a job
# trains on the CPU on a GPU host: ~0.5 s on one core of that host, against ~1 s of CUDA
# start-up before the GPU computes anything.
CPU_LANE_FLOPS = 10e9


# CPU flags (Linux /proc/cpuinfo) of native bf16 arithmetic.
CPU_BF16_FLAGS = {"avx512_bf16", "amx_bf16"}


def _cpuinfo(key):
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_name():
    return _cpuinfo("model name") or "cpu"


def cpu_bf16():
    """Whether this CPU computes bf16 natively, with a torch (2.x) whose CPU autocast uses it."""
    return int(torch.__version__.split(".")[0]) >= 2 and bool(CPU_BF16_FLAGS & set((_cpuinfo("flags") or "").split()))


def probe():
    """Device info for the fork server, which must not initialise CUDA: a forked child could not use it.

    With PYTORCH_NVML_BASED_CUDA_CHECK=1 (set by the zygote before importing torch)
    is_available() asks NVML instead of the CUDA driver. The GPU's name would need the
    driver; the runner names it from nvidia-smi (gpu-runner/gpus.ts).
    """
    if torch.cuda.is_available():
        return {"kind": "cuda", "name": "cuda", "torch_version": torch.__version__}
    if torch.backends.mps.is_available():
        return {"kind": "mps", "name": "Apple MPS", "torch_version": torch.__version__}
    return {"kind": "cpu", "name": _cpu_name(), "torch_version": torch.__version__}


def _placement(device):
    """Where tensors of `device` go. The identity, except under the CPU tests' CUDA stand-in,
    which keeps tensors on the CPU while every torch.cuda call still sees the CUDA device."""
    return device


class Accelerator:
    """The device one job trains on.

    `device` is what torch.cuda calls get (a CUDA device always with its index);
    `tensors` is where the job's tensors and model live.
    """

    def __init__(self, device):
        self.device = device
        self.kind = device.type
        self.cuda = self.kind == "cuda"
        self.tensors = _placement(device)

    def info(self):
        """What the job trained on: on a GPU host, a job in the CPU lane says cpu."""
        names = {"cpu": _cpu_name, "mps": lambda: "Apple MPS", "cuda": lambda: torch.cuda.get_device_name(self.device)}
        return {"kind": self.kind, "name": names[self.kind](), "torch_version": torch.__version__}

    @staticmethod
    def precision(dtype):
        """What a job with autocast `dtype` (None: none) computes in, as its result says."""
        return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, "fp32")

    def cap_memory(self, fraction):
        """The runner's slots on this GPU split its memory: an OOM stays with the trial that grew."""
        if self.cuda and fraction > 0:
            torch.cuda.set_per_process_memory_fraction(float(fraction), self.device.index)

    def amp_dtype(self, wanted):
        """The autocast dtype of a mixed-precision recipe, or None: on a GPU bf16 where it has it
        (fp32's range, so no loss scaling), else fp16 with a scaler; on a CPU bf16 where it
        computes it natively (cpu_bf16), else none."""
        if not wanted:
            return None
        if self.cuda:
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.bfloat16 if self.kind == "cpu" and cpu_bf16() else None

    def autocast(self, dtype):
        """Mixed precision in the block when the recipe has a dtype. No autocast object otherwise:
        torch 1.13 refuses a CPU one for fp16 even when it is disabled."""
        return torch.autocast(self.kind, dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def grad_scaler(self, enabled):
        # torch.amp.GradScaler from torch 2.3; torch.cuda.amp's is deprecated there and all 1.x has.
        if hasattr(torch.amp, "GradScaler"):
            return torch.amp.GradScaler("cuda", enabled=enabled)
        return torch.cuda.amp.GradScaler(enabled=enabled)

    def set_determinism(self, deterministic):
        """A deterministic recipe gives up torch's nondeterministic algorithms; cuDNN's autotuning,
        nondeterministic itself, is off either way (see the module's note). TF32 matmuls (cuDNN
        convolutions use TF32 by default) are allowed unless the recipe must replay."""
        if deterministic:
            # cuBLAS reads this when its first handle is created, which is after this point.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
        if self.cuda:
            torch.backends.cudnn.deterministic = deterministic
            torch.backends.cudnn.benchmark = False
            torch.set_float32_matmul_precision("highest" if deterministic else "high")

    def synchronize(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def reset_peak_memory(self):
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)

    def peak_memory_mb(self):
        """The most memory torch's allocator held on the job's GPU since reset_peak_memory, in MiB
        (the weights included); None on a CPU, whose allocator keeps no such count."""
        return torch.cuda.max_memory_allocated(self.device) / 2 ** 20 if self.cuda else None


def choose(train_flops):
    """The accelerator of a job whose training is predicted to cost `train_flops` (None: unknown)."""
    if torch.cuda.is_available():
        if train_flops is not None and train_flops < CPU_LANE_FLOPS:
            return Accelerator(torch.device("cpu"))
        return Accelerator(torch.device("cuda", torch.cuda.current_device()))
    if torch.backends.mps.is_available():
        return Accelerator(torch.device("mps"))
    return Accelerator(torch.device("cpu"))


def lane_open(params, passes):
    """Whether the CPU lane is worth a FLOP count: only on a GPU host, and only when `passes`
    example passes (a training example counting three) of a model with `params` weights may be
    cheap enough: a dense or convolutional layer does at least 2 FLOPs per weight per example."""
    return torch.cuda.is_available() and 2 * params * passes < CPU_LANE_FLOPS
