"""The worker's CUDA path on a CPU machine: every torch.cuda call goes through torch's own
wrappers over a strict stand-in for CUDA's C layer (cuda_standin.py); the CPU lane and the
no-autotuning policy are as measured on a GPU host."""

import os

import pytest
import torch

import accel
import cost
import trainer
from conftest import needs_torch_func
from cuda_standin import cuda_standin
from test_trainer import IMAGES, run

# Several epochs on 640 examples: past a lowered CPU-lane threshold, with a mixed-precision GPU recipe.
GPU_RECIPE = {"epochs": 3, "batch_size": 64, "amp": True, "channels_last": True, "ema_decay": 0.9,
              "augment": {"hflip": True, "crop_padding": 1, "cutout": 2}}
LARGER = {**IMAGES, "subset": 640}


def test_the_stand_in_refuses_what_torch_2_11_refused_on_a_real_h200(monkeypatch):
    """The call that crashed every CUDA job: a device without an index where torch needs one."""
    with cuda_standin(monkeypatch):
        with pytest.raises(ValueError, match="with a specified index"):
            torch.cuda.set_per_process_memory_fraction(0.25, torch.device("cuda"))
        with pytest.raises(TypeError, match="must be `float`"):
            torch.cuda.set_per_process_memory_fraction(1, 0)
        torch.cuda.set_per_process_memory_fraction(0.25, 0)


def test_a_training_job_makes_every_cuda_call_as_a_gpu_host_accepts_it(monkeypatch):
    monkeypatch.setattr(accel, "CPU_LANE_FLOPS", 0)
    with cuda_standin(monkeypatch) as gpu:
        result, progress = run("train", dataset=LARGER, recipe=GPU_RECIPE, evaluate_test=True,
                               limits={"gpu_memory_fraction": 0.125})
        assert result["kind"] == "result", result
        assert result["device"] == {"kind": "cuda", "name": "NVIDIA H200", "torch_version": torch.__version__,
                                    "memory_format": "channels_last", "precision": "bf16"}
        assert gpu.called("set_memory_fraction") == [(0.125, 0)]
        assert gpu.called("synchronize") == [(0,)]  # once, for the time to the first step
        assert not torch.backends.cudnn.deterministic and torch.get_float32_matmul_precision() == "high"
        assert not torch.backends.cudnn.benchmark
    assert [e["epoch"] for e in progress if e["kind"] == "epoch"] == [1, 2, 3]


@needs_torch_func
def test_seeds_together_train_in_one_job_on_the_gpu_path(monkeypatch):
    # What a GPU runner's "auto" does with a trial's seeds (stack.Stack): one job, one context.
    monkeypatch.setattr(accel, "CPU_LANE_FLOPS", 0)
    with cuda_standin(monkeypatch) as gpu:
        result, progress = run("train", dataset=LARGER, recipe=GPU_RECIPE, evaluate_test=True, together=3,
                               limits={"gpu_memory_fraction": 0.125})
        assert result["kind"] == "result" and result["seeds"] == [0, 1, 2], result
        for seed_result in result["results"]:
            # bf16 as a seed alone; the stacked input has no channels-last form.
            assert seed_result["device"] == {"kind": "cuda", "name": "NVIDIA H200", "torch_version": torch.__version__,
                                             "memory_format": "contiguous", "precision": "bf16"}
            assert seed_result["metrics"]["test_accuracy"] > 0.25
        assert gpu.called("set_memory_fraction") == [(0.125, 0)]
        assert gpu.called("synchronize") == [(0,)]
    assert sorted(e["seed"] for e in progress if e["kind"] == "epoch") == [0] * 3 + [1] * 3 + [2] * 3


def test_timing_inference_synchronises_the_device_around_every_pass(monkeypatch):
    monkeypatch.setattr(accel, "CPU_LANE_FLOPS", 0)
    with cuda_standin(monkeypatch) as gpu:
        result, _ = run("train", dataset=LARGER, recipe=GPU_RECIPE, evaluate_test=True, measure_inference=True)
        assert result["kind"] == "result", result
        passes = sum(result["inference"][key]["repeats"] for key in ("batch_1", "batch_eval")) + 2 * cost.WARM_PASSES
        # Before and after each pass, on the job's device; once more for the time to the first step.
        assert gpu.called("synchronize") == [(0,)] * (1 + 2 * passes)
        # The allocator's peak, reset before each batch size's passes and read after them.
        assert gpu.called("reset_peak_memory_stats") == [(0,)] * 2
        for key in ("batch_1", "batch_eval"):
            assert result["inference"][key]["peak_memory_mb"] == 96.0
        # Trained on a GPU: one sample on the host's CPU as well, where no device is synchronised.
        host = result["inference"]["host_cpu_batch_1"]
        assert host["batch"] == 1 and cost.MIN_REPEATS <= host["repeats"] <= cost.INFERENCE_REPEATS, host
        assert 0 < host["median_ms"] <= host["p90_ms"] and "peak_memory_mb" not in host, host


def test_a_deterministic_recipe_turns_off_tf32_and_autotuning_stays_off(monkeypatch):
    monkeypatch.setattr(accel, "CPU_LANE_FLOPS", 0)
    with cuda_standin(monkeypatch):
        try:
            result, _ = run("train", dataset=LARGER, recipe={**GPU_RECIPE, "deterministic": True})
            assert result["kind"] == "result", result
            assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
            assert torch.get_float32_matmul_precision() == "highest"
        finally:
            torch.use_deterministic_algorithms(False)


def test_a_job_below_the_cpu_lane_never_initialises_cuda(monkeypatch):
    with cuda_standin(monkeypatch) as gpu:
        result, _ = run("train", recipe={"epochs": 1, "amp": True, "channels_last": True},
                        limits={"gpu_memory_fraction": 0.125})
        assert result["kind"] == "result", result
        assert result["device"]["kind"] == "cpu"
        assert gpu.calls == [], gpu.calls


def test_the_lane_follows_the_counted_flops(monkeypatch):
    """A tiny CNN's training on 640 examples costs ~1e8 FLOPs (cost.training_flops):
    a threshold above that keeps it on the CPU, one below sends it to the GPU."""
    with cuda_standin(monkeypatch):
        for threshold, kind in ((1e9, "cpu"), (1e6, "cuda")):
            monkeypatch.setattr(accel, "CPU_LANE_FLOPS", threshold)
            result, _ = run("train", dataset=LARGER, recipe={"epochs": 1})
            assert result["device"]["kind"] == kind, (threshold, result["device"])


def test_the_fork_server_probe_asks_nvml_and_never_initialises_cuda(monkeypatch):
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    with cuda_standin(monkeypatch) as gpu:
        assert accel.probe() == {"kind": "cuda", "name": "cuda", "torch_version": torch.__version__}
        assert not gpu.initialised


def test_a_gpu_without_bf16_trains_mixed_precision_in_fp16_with_a_scaler(monkeypatch):
    with cuda_standin(monkeypatch, name="Tesla T4", major=7):
        acc = accel.choose(None)
        assert acc.amp_dtype(True) is torch.float16 and acc.amp_dtype(False) is None
        assert acc.grad_scaler(enabled=True).is_enabled()
        assert acc.info()["name"] == "Tesla T4"


def test_without_cuda_nothing_touches_the_gpu(monkeypatch):
    monkeypatch.setattr(accel, "_cpuinfo", lambda key: "fpu avx2" if key == "flags" else "a test CPU")
    acc = accel.choose(10 ** 15)
    assert acc.kind == ("mps" if torch.backends.mps.is_available() else "cpu")
    assert acc.amp_dtype(True) is None
    assert not acc.grad_scaler(enabled=False).is_enabled()
    acc.synchronize()
    acc.cap_memory(0.5)


@pytest.mark.parametrize("flags, precision", [("fpu avx2 avx512f avx512_bf16", "bf16"), ("fpu avx2 amx_bf16", "bf16"),
                                              ("fpu avx2 avx512f", "fp32")])
def test_on_a_cpu_mixed_precision_is_bf16_where_the_cpu_computes_it_natively(monkeypatch, flags, precision):
    """A CPU without native bf16 would emulate it, slower than fp32: such a job trains in fp32.
    torch 1.13's CPU autocast is not used (the runner's fallback interpreter)."""
    monkeypatch.setattr(accel, "_cpuinfo", lambda key: flags if key == "flags" else "a test CPU")
    if torch.__version__.startswith("1."):
        precision = "fp32"
    assert accel.Accelerator(torch.device("cpu")).amp_dtype(True) is {"bf16": torch.bfloat16, "fp32": None}[precision]
    result, _ = run("train", recipe={"epochs": 3, "batch_size": 32, "amp": True, "channels_last": True})
    assert result["kind"] == "result", result
    assert result["device"]["kind"] == "cpu" and result["device"]["precision"] == precision
    assert result["metrics"]["val_accuracy"] > 0.5  # chance is 0.25
    plain, _ = run("train", recipe={"epochs": 1})
    assert plain["device"]["precision"] == "fp32"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the stand-in covers the calls on CPU")
def test_on_a_real_gpu_a_job_trains_with_the_calls_the_stand_in_checked():
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    result, _ = run("train", dataset=LARGER, recipe=GPU_RECIPE, limits={"gpu_memory_fraction": 0.125})
    assert result["kind"] == "result", result
    assert trainer.accel is accel
