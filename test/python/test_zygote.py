"""zygote.py as the runner drives it (JSON lines on stdin and stdout), without the bubblewrap sandbox.

test/runner/runner.test.ts covers the sandboxed service end to end; these are
the worker's own guarantees: one terminal event per job whatever the model
does, its limits, cancellation, a busy worker refusing a second job, and
nothing left behind.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import torch

from conftest import WORKER_DIR, full_spec, needs_torch_func, published, referee, scored

DIGITS = {"name": "digits", "subset": 200}

MLP = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))
"""


def hostile(forward="", init=""):
    """MLP with `forward` run before the forward pass and `init` at the end of __init__."""
    source = MLP.replace("import torch.nn as nn", "import ctypes, os, subprocess, sys\nimport torch\nimport torch.nn as nn")
    source = source.replace("        self.fc = nn.Linear(64, 10)\n", f"        self.fc = nn.Linear(64, 10)\n        {init}\n")
    return source.replace("        return self.fc(", f"        {forward}\n        return self.fc(")


def train(source=MLP, limits=None):
    return full_spec("train", source=source, dataset=DIGITS, recipe={"epochs": 1, "batch_size": 50}, limits=limits or {})


class Zygote:
    """The zygote, and what the runner does around it: the referee publishes each train job's split,
    the job's labels file goes in for the job and out after it, and the referee scores its result."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.proc = subprocess.Popen([sys.executable, "-u", os.path.join(WORKER_DIR, "zygote.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env={**os.environ, "RUNNER_SCRATCH": scratch, "RUNNER_DATA": referee().public_root})
        self.buffer = b""
        self.jobs = 0
        try:
            # Its start imports torch and warms it up: seconds when idle, over a minute at a load of 20 on 2 cores.
            self.ready = self.read(timeout=300)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise

    def read(self, timeout=60):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError(f"no reply from the zygote within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError(f"the zygote exited with status {self.proc.wait()}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def send(self, *messages):
        lines = (message if isinstance(message, str) else json.dumps(message) for message in messages)
        self.proc.stdin.write("".join(f"{line}\n" for line in lines).encode())
        self.proc.stdin.flush()

    def run(self, task, spec, then=(), timeout=60):
        """(terminal event, progress events, replies for other jobs) of one job.

        then: messages for the zygote to find while the job runs, e.g. a cancel or a second
        job. They go in the same write as the job, so they cannot arrive after it ended.
        """
        self.jobs += 1
        job_id = f"job-{self.jobs}"
        labels = os.path.join(self.scratch, "labels-in", f"{job_id}.npy")
        if task == "train" and "dataset_id" not in spec:
            spec, published_labels = published(spec)
            os.makedirs(os.path.dirname(labels), exist_ok=True)
            shutil.copy(published_labels, labels)
        self.send({"type": "run", "job_id": job_id, "task": task, "spec": spec},
                  *(message(job_id) if callable(message) else message for message in then))
        terminal, progress, others = None, [], []
        while True:
            reply = self.read(timeout)
            if reply.get("job_id") != job_id:
                others.append(reply)
            elif reply["type"] == "done":
                assert terminal is not None, "done without a terminal event"
                if os.path.exists(labels):
                    os.remove(labels)
                return scored(spec.get("dataset"), terminal, progress), progress, others
            elif reply["event"]["kind"] in ("epoch", "first_step", "seed_result"):
                progress.append(reply["event"])
            else:
                assert terminal is None, f"two terminal events: {terminal} and {reply['event']}"
                terminal = reply["event"]

    def close(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


@pytest.fixture(scope="module")
def scratch():
    # Like the runner's slot folders: searchable by the jobs' uid on the way to their caches
    # (pytest's own temporary folders sit under a 0700 one).
    root = tempfile.mkdtemp(prefix="zygote-test-")
    os.chmod(root, 0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def zygote(scratch):
    process = Zygote(scratch)
    yield process
    assert process.close() == 0


def failure_of(zygote, spec, label, then=()):
    event, _, _ = zygote.run("train", spec, then)
    assert event["kind"] == "failure" and event["label"] == label, event
    return event


def test_ready_names_the_device_and_trains_a_good_model(zygote):
    assert zygote.ready["type"] == "ready"
    assert zygote.ready["device"]["kind"] in ("cpu", "cuda", "mps")
    assert zygote.ready["device"]["sandboxed"] is False
    result, progress, _ = zygote.run("train", train())
    assert result["kind"] == "result", result
    assert [e["kind"] for e in progress] == ["first_step", "epoch"]


def test_kernel_caches_outlive_the_job_that_filled_them(zygote, scratch):
    # What the CUDA driver would do with its JIT cache, done by the model itself as the job's uid.
    source = hostile(init="d = os.environ['CUDA_CACHE_PATH']; os.makedirs(d, exist_ok=True); "
                          "open(os.path.join(d, 'kernels'), 'a').write('k')")
    for _ in range(2):
        result, _, _ = zygote.run("train", train(source))
        assert result["kind"] == "result", result
    with open(os.path.join(scratch, ".cache", "cuda", "kernels")) as f:
        assert f.read() == "kk"


def test_what_a_model_prints_cannot_corrupt_the_protocol(zygote):
    noisy = hostile("print('{not json'); sys.stdout.flush(); os.write(1, b'garbage\\n'); os.write(2, b'noise\\n')")
    result, _, _ = zygote.run("train", train(noisy))
    assert result["kind"] == "result", result


@pytest.mark.parametrize("forward, message", [
    ("os._exit(3)", "worker exited with status 3"),
    ("ctypes.string_at(0)", "worker died with SIGSEGV"),
    # Without its event pipe the child cannot report: the zygote notices the silent exit.
    ("os.closerange(0, 256)", "worker exited"),
])
def test_a_worker_that_dies_is_a_crash(zygote, forward, message):
    assert message in failure_of(zygote, train(hostile(forward)), "crash")["message"]


def test_a_worker_stopped_from_outside_is_its_runner_going_away(zygote):
    # What a Slurm job's cancellation does to the training child as to every process of the job.
    event = failure_of(zygote, train(hostile("os.kill(os.getpid(), 15)")), "runner_unavailable")
    assert event["message"] == "worker stopped from outside with SIGTERM"


def test_the_cpu_time_limit(zygote):
    event = failure_of(zygote, train(hostile("while True: pass"), limits={"cpu_seconds": 1}), "budget_overrun")
    assert event["message"] == "exceeded the CPU-time budget of 1 s"


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA the address space is not limited (a cgroup is)")
def test_the_memory_limit(zygote):
    event = failure_of(zygote, train(hostile("big = torch.ones(10 * 2**30, dtype=torch.uint8)"),
                                     limits={"memory_mb": 512}), "oom")
    assert "DefaultCPUAllocator" in event["message"]


def test_cancel_ends_a_running_job(zygote):
    t0 = time.monotonic()
    event = failure_of(zygote, train(hostile("while True: pass")), "crash",
                       then=[lambda job_id: {"type": "cancel", "job_id": job_id}])
    assert event["message"] == "cancelled by caller"
    assert time.monotonic() - t0 < 10


def test_a_busy_worker_refuses_a_second_job_and_finishes_the_first(zygote):
    second = {"type": "run", "job_id": "second", "task": "summarize", "spec": full_spec("summarize", source=MLP)}
    result, _, others = zygote.run("train", train(), then=[second])
    assert result["kind"] == "result", result
    assert [(m["job_id"], m["type"], m.get("event", {}).get("label")) for m in others] == \
        [("second", "event", "runner_unavailable"), ("second", "done", None)]


def test_processes_a_job_started_are_killed_when_it_ends(zygote):
    # A unique argument, so sleepers of a concurrent test run are not mistaken for ours.
    argument = f"1007.{os.getpid()}"
    init = f"subprocess.Popen(['sleep', '{argument}'], start_new_session=True)"
    event = failure_of(zygote, train(hostile(init=init)), "sandbox_violation")
    assert "starting a process (subprocess.Popen)" in event["message"]
    assert not sleepers(argument)


@pytest.mark.parametrize("init, breach", [
    # The model turns the refused connection into an error of its own...
    ("try:\n            socket.create_connection(('127.0.0.1', 9), timeout=1)\n        except OSError:\n"
     "            raise ValueError('width must be even')", "network use (socket.getaddrinfo)"),
    # ... or swallows the refused write and trains on as if nothing happened.
    ("try:\n            open('/nonexistent-dir/pwned', 'w')\n        except OSError:\n            pass",
     "writing /nonexistent-dir/pwned, outside the job's scratch folder"),
    ("try:\n            os.fork() or os._exit(0)\n        except OSError:\n            pass", "starting a process (os.fork)"),
])
def test_a_policy_breach_is_labelled_whatever_the_model_makes_of_it(zygote, init, breach):
    event = failure_of(zygote, train(hostile(init="import socket\n        " + init)), "sandbox_violation")
    assert breach in event["message"], event


def test_a_job_that_floods_its_event_pipe_is_stopped(zygote):
    flood = ("emit = next(o for o in __import__('gc').get_objects() if type(o).__name__ == '_Emitter')\n"
             "        os.write(emit.fd, b'x' * (70 << 20))")
    event = failure_of(zygote, train(hostile(init=flood)), "sandbox_violation")
    assert "wrote more than 64 MB to its event pipe" in event["message"]


def test_writing_in_its_own_scratch_folder_is_no_breach(zygote):
    result, _, _ = zygote.run("train", train(hostile(init="open('notes.txt', 'w').write('x'); os.mkdir('sub')")))
    assert result["kind"] == "result", result


def sleepers(argument):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", argument.encode()]:
                    found.append(pid)
        except OSError:
            pass
    return found


def test_bad_requests_get_labelled_answers_and_the_worker_keeps_serving(zygote):
    zygote.send("this is not json", {"type": "run", "job_id": "bad id!", "task": "train", "spec": {}})
    assert zygote.read() == {"type": "event", "job_id": "bad id!",
                             "event": {"kind": "failure", "label": "invalid_config",
                                       "message": "invalid job id 'bad id!'", "traceback": ""}}
    assert zygote.read()["type"] == "done"
    event, _, _ = zygote.run("describe", full_spec("describe"))
    assert event["label"] == "invalid_config" and "unknown task 'describe'" in event["message"]
    # A split nobody published, and a job given no labels: labelled, and the worker serves on.
    unpublished = {**published(train())[0], "split_id": "0" * 16}
    event, _, _ = zygote.run("train", unpublished)
    assert event["label"] == "crash" and "published split 0000000000000000" in event["message"]
    event, _, _ = zygote.run("train", published(train())[0])
    assert event["label"] == "invalid_config" and "no training labels" in event["message"]
    event, _, _ = zygote.run("train", train())
    assert event["kind"] == "result", event


def test_every_job_scratch_directory_is_removed(zygote, scratch):
    zygote.run("train", train(hostile(init="open('left-behind.txt', 'w').write('x')")))
    # The worker's kernel caches and the (emptied) folder of labels files, no job's files.
    assert sorted(os.listdir(scratch)) == [".cache", "labels-in"] and not os.listdir(os.path.join(scratch, "labels-in"))


@needs_torch_func
def test_seeds_trained_together_keep_a_file_each_that_evaluates_as_its_seed(zygote, scratch):
    """A job of two seeds (stack.Stack) sends each seed's epochs and result, then one end, and
    keeps weights-out/<job id>.<i>.pt per seed: loaded alone, each scores as its seed did."""
    spec = full_spec("train", source=MLP, dataset=DIGITS, recipe={"epochs": 3, "lr": 0.02, "batch_size": 50}, seed=3)
    together, progress, _ = zygote.run("train", {**spec, "together": 2, "weights": "keep"})
    assert together["kind"] == "result" and together["seeds"] == [3, 4], together
    assert sorted((e["seed"], e["epoch"]) for e in progress if e["kind"] == "epoch") == [(3, 1), (3, 2), (3, 3), (4, 1), (4, 2), (4, 3)]
    results = {r["seed"]: r for r in together["results"]}
    assert results[3]["metrics"]["val_accuracy"] != results[4]["metrics"]["val_accuracy"] or \
        results[3]["learning_curve"]["train_loss"] != results[4]["learning_curve"]["train_loss"]
    job = zygote.jobs
    os.makedirs(os.path.join(scratch, "weights-in"), exist_ok=True)
    for i, seed in enumerate((3, 4)):
        os.replace(os.path.join(scratch, "weights-out", f"job-{job}.{i}.pt"),
                   os.path.join(scratch, "weights-in", f"job-{zygote.jobs + 1}.pt"))
        loaded, _, _ = zygote.run("train", {**spec, "seed": seed, "weights": "load"})
        assert loaded["metrics"]["val_accuracy"] == results[seed]["metrics"]["val_accuracy"], (seed, loaded)
    assert not os.listdir(os.path.join(scratch, "weights-out"))


def test_a_training_continues_from_kept_weights(zygote, scratch):
    """A later run's continued training (EvaluateRequest.init_weights): each seed of the job starts
    from the file under weights-init/<job id>.<i>.pt. With a learning rate too small to learn
    anything in an epoch, the continued seeds score what the kept model scored and fresh ones
    score chance: the weights were loaded, not an initialisation of the model's own."""
    spec = full_spec("train", source=MLP, dataset=DIGITS, recipe={"epochs": 8, "lr": 0.02, "batch_size": 50})
    trained, _, _ = zygote.run("train", {**spec, "weights": "keep"})
    assert trained["kind"] == "result" and trained["metrics"]["val_accuracy"] > 0.6, trained
    kept = os.path.join(scratch, "weights-out", f"job-{zygote.jobs}.0.pt")
    # Seeds together (torch 2) take a file each, <job id>.<i>; torch 1 has no torch.func and trains them apart.
    together = 2 if hasattr(torch, "func") else 1
    still = {**spec, "recipe": {**spec["recipe"], "epochs": 1, "lr": 1e-7, "warmup_epochs": 0}, "together": together, "seed": 5}
    os.makedirs(os.path.join(scratch, "weights-init"), exist_ok=True)
    for i in range(together):
        shutil.copy(kept, os.path.join(scratch, "weights-init", f"job-{zygote.jobs + 1}.{i}.pt"))
    continued, _, _ = zygote.run("train", {**still, "init": True})
    assert continued["kind"] == "result", continued
    for r in continued.get("results", [continued]):
        assert abs(r["metrics"]["val_accuracy"] - trained["metrics"]["val_accuracy"]) <= 0.02, r["metrics"]
    fresh, _, _ = zygote.run("train", still)
    assert all(r["metrics"]["val_accuracy"] < 0.4 for r in fresh.get("results", [fresh])), fresh
    # Weights of another model do not fit: labelled, never a silent fresh start.
    other = full_spec("train", source=MLP.replace("nn.Linear(64, 10)", "nn.Linear(64, 10, bias=False)"), dataset=DIGITS, recipe=still["recipe"])
    shutil.copy(kept, os.path.join(scratch, "weights-init", f"job-{zygote.jobs + 1}.0.pt"))
    event, _, _ = zygote.run("train", {**other, "init": True})
    assert event["label"] == "invalid_config" and "weights to start from" in event["message"], event
    # Nothing to start from is the caller's mistake, labelled too.
    event, _, _ = zygote.run("train", {**spec, "init": True})
    assert event["label"] == "invalid_config" and "no weights to start from" in event["message"], event


def test_kept_weights_evaluate_again_without_training(zygote, scratch):
    """The test confirmation's path: a seed trained with weights "keep" leaves its weights under
    weights-out/<job id>.0.pt; given back under weights-in/, they score the same without a single epoch."""
    spec = full_spec("train", source=MLP, dataset=DIGITS, recipe={"epochs": 8, "lr": 0.02, "batch_size": 50, "ema_decay": 0.9})
    trained, _, _ = zygote.run("train", {**spec, "weights": "keep"})
    assert trained["kind"] == "result", trained
    kept = os.path.join(scratch, "weights-out", f"job-{zygote.jobs}.0.pt")
    os.makedirs(os.path.join(scratch, "weights-in"), exist_ok=True)
    os.replace(kept, os.path.join(scratch, "weights-in", f"job-{zygote.jobs + 1}.pt"))
    loaded, progress, _ = zygote.run("train", {**spec, "weights": "load", "evaluate_test": True})
    assert loaded["kind"] == "result", loaded
    assert progress == [] and loaded["epochs_completed"] == 0
    # The averaged weights were kept (evaluation saw them), so validation agrees to the last example.
    assert loaded["metrics"]["val_accuracy"] == trained["metrics"]["val_accuracy"]
    assert loaded["metrics"]["test_accuracy"] > 0.5 and "train_accuracy" not in loaded["metrics"], (trained["metrics"], loaded["metrics"])
    # Nothing to load is the caller's mistake, labelled; a fresh model never silently stands in.
    event, _, _ = zygote.run("train", {**spec, "weights": "load", "evaluate_test": True})
    assert event["label"] == "invalid_config" and "no weights" in event["message"]
