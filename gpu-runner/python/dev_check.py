#!/usr/bin/env python3
"""Hand-run check of the zygote: good jobs, every loader, hostile models.

    /usr/bin/python3 gpu-runner/python/dev_check.py [--bwrap] [--only NAME ...]

Starts the zygote as a subprocess (directly, or inside bubblewrap with --bwrap),
writes the fixture datasets with test/fixtures/make_datasets.py into a temp dir,
sends one job per case and checks the terminal event. Prints start-up and
time-to-first-step numbers. Not part of the automated tests: it takes a minute
or two on two cores, and a fork bomb is deliberately not among the cases.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"

CNN = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, in_channels=1, size=8, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * (size // 2) ** 2, num_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))
"""

MLP = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, in_features, num_classes):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Linear(32, num_classes))

    def forward(self, x):
        return self.net(x)
"""

BAG_OF_WORDS = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, vocab=16384, num_classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32, padding_idx=0)
        self.head = nn.Linear(32, num_classes)

    def forward(self, ids):
        mask = (ids > 0).unsqueeze(-1).float()
        pooled = (self.embed(ids) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.head(pooled)
"""

TRANSFORMER = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16384, 32, padding_idx=0)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True), num_layers=2)
        self.head = nn.Linear(32, 2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(1))
"""


def hostile(body, init=""):
    """A model whose forward (or __init__) runs `body` before a valid computation."""
    return f"""
import os, sys, time, ctypes, subprocess
import numpy as np
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)
{indent(init, 8)}

    def forward(self, x):
{indent(body, 8)}
        return self.fc(x.flatten(1))
"""


def indent(code, spaces):
    return "\n".join(" " * spaces + line for line in code.strip("\n").splitlines()) if code else ""


def train_spec(source, dataset, init_kwargs=None, epochs=1, limits=None, **extra):
    spec = {
        "seed": 0, "source": source, "class_name": "Net", "init_kwargs": init_kwargs or {},
        "dataset": {"val_fraction": 0.1, "split_seed": 0, **dataset},
        "recipe": {"optimizer": "adam", "lr": 0.003, "batch_size": 32, "epochs": epochs,
                   "augment": {"hflip": False, "crop_padding": 0, "cutout": 0}},
        "max_params": 0, "evaluate_test": False, "threads": 1,
        "limits": {"memory_mb": 2048, "cpu_seconds": 120, "wall_seconds": 60, "file_mb": 16, "nproc": 64,
                   **(limits or {})},
    }
    spec.update(extra)
    return spec


class Zygote:
    def __init__(self, command):
        self.started = time.monotonic()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        ready = json.loads(self.proc.stdout.readline())
        self.ready_s = time.monotonic() - self.started
        assert ready["type"] == "ready", ready
        self.device = ready["device"]

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def run(self, task, spec, cancel_after=None, second_run=None):
        """(progress events, terminal event, done seconds, wall seconds); other jobs' replies go to .others.

        cancel_after: seconds after which to cancel the job; second_run: a describe spec sent
        while the job runs, which the busy zygote must refuse.
        """
        job_id = uuid.uuid4().hex[:12]
        start = time.monotonic()
        self.send({"type": "run", "job_id": job_id, "task": task, "spec": spec})
        if cancel_after is not None:
            timer = threading.Timer(cancel_after, self.send, [{"type": "cancel", "job_id": job_id}])
            timer.start()
        if second_run is not None:
            self.send({"type": "run", "job_id": "second", "task": "describe", "spec": second_run})
        progress, terminal, others = [], None, []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"zygote exited with {self.proc.wait()}")
            message = json.loads(line)
            if message["job_id"] != job_id:
                others.append(message)
                continue
            if message["type"] == "done":
                break
            event = message["event"]
            if event["kind"] in ("epoch", "first_step"):
                progress.append(event)
            else:
                assert terminal is None, "two terminal events"
                terminal = event
        if cancel_after is not None:
            timer.cancel()
        assert terminal is not None, "done without a terminal event"
        self.others = others
        return progress, terminal, message["seconds"], time.monotonic() - start

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def cases(fx):
    digits = {"name": "digits", "subset": 500}
    tiny_mnist = {"name": "mnist", "data_dir": f"{fx}/mnist"}
    cnn28 = {"size": 28}
    cnn32 = {"in_channels": 3, "size": 32}
    yield "digits-cnn", "train", train_spec(CNN, digits, epochs=3), \
        ("result", lambda t: t["metrics"]["val_accuracy"] > 0.8)
    sgd_recipe = {"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "schedule": "onecycle",
                  "label_smoothing": 0.1, "grad_clip": 1.0, "batch_size": 32, "epochs": 3,
                  "augment": {"hflip": True, "crop_padding": 1, "cutout": 2}}
    yield "digits-recipe-test-split", "train", train_spec(CNN, digits, evaluate_test=True, recipe=sgd_recipe), \
        ("result", lambda t: "test_accuracy" in t["metrics"] and len(t["learning_curve"]["lr"]) == 3)
    yield "mnist-idx", "train", train_spec(CNN, tiny_mnist, cnn28, epochs=3), \
        ("result", lambda t: t["metrics"]["val_accuracy"] > 0.3)
    yield "fashion-mnist-system", "train", train_spec(CNN, {"name": "fashion-mnist", "subset": 1000}, cnn28,
                                                      epochs=2), ("result", lambda t: t["metrics"]["val_accuracy"] > 0.5)
    yield "cifar10-pickles", "train", train_spec(CNN, {"name": "cifar10", "data_dir": f"{fx}/cifar10"}, cnn32,
                                                 epochs=3), ("result", None)
    yield "cifar10-batches-folder", "describe", {"dataset": {"name": "cifar10",
                                                             "data_dir": f"{fx}/cifar10/cifar-10-batches-py"}}, \
        ("dataset", lambda t: t["input_shape"] == [3, 32, 32] and t["class_names"][0] == "airplane")
    yield "cifar100-pickles", "train", train_spec(CNN, {"name": "cifar100", "data_dir": f"{fx}/cifar100"},
                                                  {**cnn32, "num_classes": 100}), ("result", None)
    yield "svhn-mat", "train", train_spec(CNN, {"name": "svhn", "data_dir": f"{fx}/svhn"}, cnn32, epochs=3), \
        ("result", None)
    yield "iris", "train", train_spec(MLP, {"name": "iris"}, {"in_features": 4, "num_classes": 3}, epochs=5), \
        ("result", None)
    yield "wine", "describe", {"dataset": {"name": "wine"}}, ("dataset", lambda t: t["input_shape"] == [13])
    yield "breast-cancer", "describe", {"dataset": {"name": "breast_cancer"}}, \
        ("dataset", lambda t: t["num_classes"] == 2)
    yield "csv-describe", "describe", {"dataset": {"name": "csv", "data_dir": f"{fx}/tabular.csv",
                                                   "target_column": "bought"}}, \
        ("dataset", lambda t: t["class_names"] == ["no", "yes"])
    yield "csv-train", "train", train_spec(MLP, {"name": "csv", "data_dir": f"{fx}/tabular.csv",
                                                 "target_column": "bought"},
                                           {"in_features": 6, "num_classes": 2}, epochs=5), \
        ("result", lambda t: t["metrics"]["val_accuracy"] > 0.6)
    yield "csv-missing-target", "train", train_spec(MLP, {"name": "csv", "data_dir": f"{fx}/tabular.csv",
                                                          "target_column": "label"}), ("invalid_config", None)
    yield "text", "train", train_spec(BAG_OF_WORDS, {"name": "text", "data_dir": f"{fx}/text"}, epochs=5,
                                      evaluate_test=True), ("result", None)
    yield "text-describe", "describe", {"dataset": {"name": "text", "data_dir": f"{fx}/text"}}, \
        ("dataset", lambda t: t["input_dtype"] == "int64" and t["vocab_size"] == 16384 and t["n_test"] == 50)
    yield "synthetic", "train", train_spec(MLP, {"name": "synthetic", "shape": [20], "num_classes": 4,
                                                 "difficulty": 0.2, "subset": 64},
                                           {"in_features": 20, "num_classes": 4}, epochs=5), ("result", None)
    yield "synthetic-image", "describe", {"dataset": {"name": "synthetic", "shape": [1, 8, 8], "num_classes": 3}}, \
        ("dataset", lambda t: t["n_train"] + t["n_val"] == 2000 and t["n_test"] == 500)
    yield "unknown-dataset", "describe", {"dataset": {"name": "imagenet"}}, ("invalid_config", None)
    yield "missing-dir", "train", train_spec(CNN, {"name": "mnist", "data_dir": "/nonexistent"}), \
        ("invalid_config", None)
    yield "bad-recipe", "train", train_spec(CNN, digits, recipe={"optimizer": "lion"}), ("invalid_config", None)
    yield "summarize-cnn", "summarize", {"source": CNN, "class_name": "Net", "init_kwargs": cnn28,
                                         "input_shape": [1, 28, 28], "num_classes": 10}, \
        ("summary", lambda t: t["total_params"] > 0 and t["flops"] > 0 and t["output_shape"] == [1, 10])
    yield "summarize-transformer", "summarize", {"source": TRANSFORMER, "class_name": "Net", "init_kwargs": {},
                                                 "input_shape": [128], "input_dtype": "int64", "num_classes": 2}, \
        ("summary", lambda t: any(layer["type"] == "MultiheadAttention" and layer["flops"] > 0
                                  for layer in t["layers"]))
    yield "summarize-wrong-classes", "summarize", {"source": CNN, "class_name": "Net", "init_kwargs": {},
                                                   "input_shape": [1, 8, 8], "num_classes": 7}, ("shape_error", None)
    yield "max-params", "train", train_spec(CNN, digits, max_params=100), ("budget_overrun", None)
    yield "syntax-error", "train", train_spec("class Net(nn.Module:\n    pass\n", digits), ("codegen_error", None)
    yield "missing-class", "train", train_spec("import torch.nn as nn\nclass Other(nn.Module): pass\n", digits), \
        ("codegen_error", None)
    yield "init-raises", "train", train_spec(hostile("", init="raise ValueError('bad kwarg')"), digits), \
        ("codegen_error", None)
    yield "shape-mismatch", "train", train_spec(CNN, digits, {"num_classes": 7}), ("shape_error", None)
    yield "nan-loss", "train", train_spec(hostile("x = x * float('nan')"), digits), ("nan_loss", None)
    yield "stdout-garbage", "train", train_spec(hostile("print('{not json'); sys.stdout.flush(); "
                                                        "os.write(1, b'garbage\\n'); os.write(2, b'noise\\n')"),
                                                digits), ("result", None)
    yield "infinite-loop", "train", train_spec(hostile("while True: pass"), digits, limits={"wall_seconds": 5}), \
        ("budget_overrun", None)
    yield "cpu-limit", "train", train_spec(hostile("while True: pass"), digits, limits={"cpu_seconds": 3}), \
        ("budget_overrun", lambda t: "CPU" in t["message"])
    yield "memory-bomb", "train", train_spec(hostile("big = np.ones(10 * 2**30, dtype=np.uint8)"), digits), \
        ("oom", None)
    yield "torch-memory-bomb", "train", train_spec(hostile("big = torch.ones(10 * 2**30, dtype=torch.uint8)"),
                                                   digits), ("oom", None)
    yield "segfault", "train", train_spec(hostile("ctypes.string_at(0)"), digits), \
        ("crash", lambda t: "SIGSEGV" in t["message"])
    yield "os-exit", "train", train_spec(hostile("os._exit(3)"), digits), ("crash", lambda t: "status 3" in t["message"])
    yield "close-fds", "train", train_spec(hostile("os.closerange(0, 256)"), digits), ("crash", None)
    yield "escaped-sleeper", "train", train_spec(hostile("", init="subprocess.Popen(['sleep', '1007'], "
                                                                  "start_new_session=True)"), digits), \
        ("result", lambda t: not _sleepers())
    yield "cancel", "train", train_spec(CNN, {"name": "fashion-mnist"}, cnn28, epochs=50), \
        ("crash", lambda t: t["message"] == "cancelled by caller"), {"cancel_after": 2.0}
    yield "busy", "train", train_spec(CNN, digits), ("result", None), \
        {"second_run": {"dataset": {"name": "digits"}}}


def _sleepers():
    time.sleep(0.2)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", b"1007"]:
                    found.append(pid)
        except OSError:
            pass
    return found


def zygote_command(use_bwrap, fx, scratch):
    if not use_bwrap:
        return [PYTHON, "-u", os.path.join(HERE, "zygote.py")]
    return ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--new-session", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
            "--ro-bind", "/etc", "/etc", "--ro-bind", HERE, "/runner",
            "--ro-bind", "/usr/share/datasets", "/usr/share/datasets", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--ro-bind", fx, fx, "--bind", scratch, "/scratch",
            "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL",
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/scratch",
            PYTHON, "-u", "/runner/zygote.py", "--pidns"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bwrap", action="store_true", help="run the zygote inside bubblewrap")
    parser.add_argument("--only", nargs="*", help="case names to run")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="zygote-check-")
    fx, scratch = os.path.join(work, "fixtures"), os.path.join(work, "scratch")
    os.makedirs(scratch)
    os.chmod(work, 0o755)
    os.chmod(scratch, 0o777)
    subprocess.run([PYTHON, os.path.join(REPO, "test", "fixtures", "make_datasets.py"), fx], check=True)
    os.environ["RUNNER_SCRATCH"] = scratch
    zygote = Zygote(zygote_command(args.bwrap, fx, scratch))
    print(f"ready after {zygote.ready_s:.2f} s: {zygote.device}")
    failures = 0
    try:
        for name, task, spec, (expected, check), *options in cases(fx):
            if args.only and name not in args.only:
                continue
            options = options[0] if options else {}
            second_run = options.get("second_run")
            progress, terminal, _, wall_s = zygote.run(task, spec, options.get("cancel_after"), second_run)
            got = terminal["label"] if terminal["kind"] == "failure" else terminal["kind"]
            ok = got == expected and (check is None or check(terminal))
            if second_run is not None:
                ok = ok and [m["event"].get("label") for m in zygote.others if m["type"] == "event"] \
                    == ["runner_unavailable"]
            failures += not ok
            first = next((e["seconds"] for e in progress if e["kind"] == "first_step"), None)
            detail = terminal.get("message", "")[:110].replace("\n", " ") if got != "result" else \
                f"val_acc={terminal['metrics']['val_accuracy']:.3f} epochs={terminal['epochs_completed']} " \
                f"first_step={first:.3f}s"
            print(f"{'ok  ' if ok else 'FAIL'} {name:26s} {got:17s} {wall_s:6.2f}s  {detail}")
            if not ok:
                print(json.dumps(terminal, indent=1)[:3000])
        # Warm time-to-first-step: the dataset is cached, so this is fork + model build + first step.
        firsts = []
        for _ in range(3):
            _, terminal, _, _ = zygote.run("train", train_spec(CNN, {"name": "digits", "subset": 500}))
            firsts.append(terminal.get("seconds_to_first_step", float("nan")))
        print(f"time to first step (warm, digits CNN): {', '.join(f'{s * 1000:.0f} ms' for s in firsts)}")
    finally:
        print(f"zygote exit status {zygote.close()}")
        leftovers = os.listdir(scratch)
        if leftovers:
            print(f"FAIL scratch not cleaned: {leftovers}")
            failures += 1
        shutil.rmtree(work, ignore_errors=True)
    print(f"{failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
