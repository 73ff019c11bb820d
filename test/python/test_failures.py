"""failures.py: exceptions land on the label that names their cause."""

import errno
import os
import re

import pytest
import torch

import failures
from conftest import REPO
from failures import Stage, TaskFailure, classify


def test_every_python_label_is_in_the_proto_enum():
    with open(os.path.join(REPO, "proto", "research", "v1", "common.proto")) as f:
        proto = f.read()
    enum = re.search(r"enum FailureLabel \{(.*?)\}", proto, re.S).group(1)
    names = {name.lower() for name in re.findall(r"FAILURE_LABEL_(\w+) =", enum)} - {"unspecified"}
    assert failures.LABELS <= names


def real(fn):
    """The exception fn raises, so messages are the libraries' own rather than our paraphrase."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - any exception is the point
        return exc
    raise AssertionError("expected an exception")


@pytest.mark.parametrize("exc, default, label", [
    (MemoryError(), "crash", "oom"),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:75] DefaultCPUAllocator: can't allocate memory: "
                  "you tried to allocate 10737418240 bytes"), "shape_error", "oom"),
    (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), "crash", "oom"),
    (PermissionError(errno.EACCES, "Permission denied", "/usr/lib/x"), "crash", "sandbox_violation"),
    (OSError(errno.ENETUNREACH, "Network is unreachable"), "codegen_error", "sandbox_violation"),
    (BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable"), "crash", "sandbox_violation"),
    (OSError(errno.EFBIG, "File too large"), "crash", "sandbox_violation"),
    (RuntimeError("can't start new thread"), "crash", "sandbox_violation"),
    (FileNotFoundError(errno.ENOENT, "No such file"), "crash", "crash"),
    (real(lambda: torch.zeros(2, 3) @ torch.zeros(4, 5)), "crash", "shape_error"),
    (real(lambda: torch.nn.Conv2d(3, 8, 3)(torch.zeros(1, 1, 8, 8))), "crash", "shape_error"),
    (real(lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)])), "crash", "shape_error"),
    (real(lambda: torch.nn.BatchNorm1d(4).train()(torch.zeros(1, 4))), "crash", "shape_error"),
    # Shape hints only reclassify crashes: at another stage the stage's label names the cause better.
    (real(lambda: torch.zeros(2, 3) @ torch.zeros(4, 5)), "codegen_error", "codegen_error"),
    (KeyError("shape"), "crash", "crash"),
    (ZeroDivisionError("division by zero"), "crash", "crash"),
])
def test_classify(exc, default, label):
    assert classify(exc, default) == label


def test_a_stage_turns_exceptions_into_its_label_with_the_traceback():
    def instantiate():
        with Stage("codegen_error", "instantiating Net"):
            raise ValueError("bad kwarg")

    with pytest.raises(TaskFailure) as caught:
        instantiate()
    failure = caught.value
    assert failure.label == "codegen_error"
    assert failure.message == "instantiating Net: ValueError: bad kwarg"
    assert "instantiate" in failure.traceback and failure.traceback.endswith("ValueError: bad kwarg")
    assert isinstance(failure.__cause__, ValueError)
    assert failure.event() == {"kind": "failure", "label": "codegen_error",
                               "message": failure.message, "traceback": failure.traceback}


def test_a_stage_classifies_what_it_catches():
    with pytest.raises(TaskFailure) as caught, Stage("crash", "training step 1 of epoch 1"):
        torch.zeros(2, 3) @ torch.zeros(4, 5)
    assert caught.value.label == "shape_error"
    assert caught.value.message.startswith("training step 1 of epoch 1: RuntimeError: mat1 and mat2")


def test_a_stage_keeps_an_empty_message_tidy_and_catches_sys_exit():
    with pytest.raises(TaskFailure) as caught, Stage("codegen_error", "compiling the model source"):
        raise SystemExit()
    assert caught.value.message == "compiling the model source: SystemExit"


def test_a_stage_lets_labelled_failures_and_interrupts_through():
    inner = TaskFailure("nan_loss", "the loss became nan")
    with pytest.raises(TaskFailure) as caught, Stage("crash", "training"):
        raise inner
    assert caught.value is inner
    with pytest.raises(KeyboardInterrupt), Stage("crash", "training"):
        raise KeyboardInterrupt


def test_tail_keeps_the_last_lines():
    text = "".join(f"line {i}\n" for i in range(100))
    kept = failures.tail(text)
    assert kept.splitlines() == [f"line {i}" for i in range(100 - failures.TRACEBACK_LINES, 100)]
    assert failures.tail("a\nb\n", lines=1) == "b"


def test_labels_outside_the_closed_set_are_a_bug():
    with pytest.raises(AssertionError):
        TaskFailure("gremlins", "?")
