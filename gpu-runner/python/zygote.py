"""Fork server ("zygote") for one runner slot.

One long-lived process per slot imports torch, numpy, scikit-learn and the
trainer once, then forks one child per job, so a job starts warm instead of
paying ~1-2 s of imports. The TypeScript runner starts it inside bubblewrap:

    /usr/bin/python3 -u gpu-runner/python/zygote.py [--pidns]

Protocol: JSON lines. stdin carries requests ({"type": "run" | "cancel" | "verdict", ...};
a verdict tells a training job whether an epoch the referee scored is its seed's best so far,
passed on to the child over a pipe of its own: trainer._BestEpoch);
stdout carries only replies ({"type": "ready" | "event" | "done", ...});
diagnostics go to stderr. Every job ends with exactly one terminal event
(result, summary, script or failure) followed by done, whatever its child does.

The child runs untrusted model code: it drops to uid 65534 when the zygote is
root, runs under rlimits in its own session, writes its stdout/stderr to a log
in its scratch directory, and reports over a dedicated pipe. The zygote never
trusts it to finish: a wall-clock deadline, cancel requests and the child's
exit status all end the job, and every process it left behind is killed.
"""

import os
import sys

# stdout is the protocol. Keep a private handle on it and point fd 1 at stderr,
# so nothing else that prints (a library warning, a stray print) can corrupt it.
_PROTOCOL_FD = os.dup(1)
os.dup2(2, 1)
# is_available() must ask NVML rather than initialise CUDA: a process that has
# initialised CUDA cannot fork children that use it.
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
# numpy's OpenBLAS would start a thread pool at import; forking is only safe
# from a single-threaded process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import ctypes  # noqa: E402
# Host names are encoded with this codec before a socket call reaches its audit event
# (policy.py); imported lazily from a prefix the job's uid may not read, a network attempt
# would fail as a LookupError before the policy saw it.
import encodings.idna  # noqa: E402,F401
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections import OrderedDict, deque  # noqa: E402

import accel  # noqa: E402
import datasets  # noqa: E402
import metrics  # noqa: E402
import script  # noqa: E402
import specs  # noqa: E402
import trainer  # noqa: E402
from failures import LABELS, TaskFailure, tail  # noqa: E402

NOBODY = 65534
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
# "apart": seeds asked together that must train in jobs of their own (stack.Stack.of).
TERMINAL_KINDS = frozenset({"result", "apart", "summary", "script", "failure"})
# "seed_result": one seed's result in a job of seeds trained together.
PROGRESS_KINDS = frozenset({"epoch", "first_step", "seed_result"})
# What a job may write to its event pipe besides the predictions a training job sends by design.
EVENT_BYTES_LIMIT = 64 << 20
EXIT_GRACE_S = 2.0
KILL_TIMEOUT_S = 5.0
OPEN_FILES = 256
PR_SET_CHILD_SUBREAPER = 36
# Files a job takes in or leaves behind, under the scratch root, named <job id>.<ext>: weights
# to load, to start from or to keep (<job id>.<i>.pt for the job's i-th seed), and the training labels of the
# job's split (datasets.publish). The runner's TypeScript side puts an input there before the job
# and takes a kept output away after it; the zygote only opens them, so the untrusted child gets
# file descriptors, and the zygote never reads a job's labels: what it holds, every later job's
# child inherits.
JOB_FILES = {"keep": ("weights-out", "pt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
             "load": ("weights-in", "pt", os.O_RDONLY),
             "init": ("weights-init", "pt", os.O_RDONLY),
             "labels": ("labels-in", "npy", os.O_RDONLY)}


def _log(message):
    print(f"zygote[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(message):
    _write_all(_PROTOCOL_FD, (json.dumps(message, allow_nan=False, separators=(",", ":")) + "\n").encode())


def _reject_constant(name):
    raise ValueError(f"non-finite number {name}")


def _failure(label, message, tb=""):
    return {"kind": "failure", "label": label, "message": message, "traceback": tb}


def _seconds(value):
    return f"{value:g} s"


# --- processes ----------------------------------------------------------------------------

def _processes():
    """(pid, ppid, pgid) of every live process in /proc; zombies are left to their reapers."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] not in ("Z", "X"):
            yield int(entry), int(fields[1]), int(fields[2])


def _kill(pid, group=False):
    try:
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _make_owner_writable(path):
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass


def _remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path) or os.getuid() != 0:
        return
    # Root without CAP_DAC_OVERRIDE (dropped by the sandbox) cannot delete inside directories
    # the job made unwritable; their owner, nobody, can make them writable again.
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            _make_owner_writable(path)
            for top, dirs, _ in os.walk(path):
                for name in dirs:
                    _make_owner_writable(os.path.join(top, name))
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    shutil.rmtree(path, ignore_errors=True)


def _address_space_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _in_bwrap_pid_namespace():
    try:
        with open("/proc/1/comm") as f:
            return f.read().strip() == "bwrap"
    except OSError:
        return False


def _become_subreaper():
    """Orphans of a job re-parent to the zygote instead of init, where it can find and kill them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _log(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")


# --- the child ----------------------------------------------------------------------------

class _Emitter:
    def __init__(self, fd):
        self.fd = fd

    def __call__(self, event):
        try:
            line = json.dumps(event, allow_nan=False)
        except (TypeError, ValueError) as exc:
            line = json.dumps(_failure("crash", f"the runner could not encode a {event.get('kind')} "
                                                f"event: {exc}", tail(traceback.format_exc())))
        _write_all(self.fd, (line + "\n").encode())


def _limit(kind, value):
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _set_limits(limits, address_space_base, cuda, dedicated_uid):
    if not cuda:
        # The child inherits the zygote's mappings (torch's libraries, cached datasets):
        # the budget is what the job may add on top of them. CUDA reserves huge address
        # ranges, so on GPUs memory must be bounded by a cgroup instead.
        _limit(resource.RLIMIT_AS, address_space_base + limits["memory_mb"] * 2 ** 20)
    cpu = math.ceil(limits["cpu_seconds"])
    # SIGXCPU at the soft limit; a model that ignores it meets SIGKILL at the hard one.
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    hard = cpu + 5 if hard == resource.RLIM_INFINITY else min(cpu + 5, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, hard), hard))
    _limit(resource.RLIMIT_FSIZE, limits["file_mb"] * 2 ** 20)
    _limit(resource.RLIMIT_NOFILE, OPEN_FILES)
    if dedicated_uid:
        # Counts every process and thread of the uid, so it only bounds the job when the
        # uid is the sandbox's own; under a developer's uid it would count their session.
        _limit(resource.RLIMIT_NPROC, limits["nproc"])


def _child_main(task, spec, split, t0, scratch, log_fd, event_fd, read_fd, address_space_base, cuda):
    emit = _Emitter(event_fd)
    try:
        os.close(read_fd)
        os.close(_PROTOCOL_FD)
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(devnull)
        os.close(log_fd)
        # Before dropping privileges: the scratch root need not be searchable by nobody.
        os.chdir(scratch)
        os.environ.update(HOME=scratch, TMPDIR=scratch)
        dedicated_uid = os.getuid() == 0
        if dedicated_uid:
            # Untrusted code must not keep root: as nobody it cannot signal the zygote,
            # and RLIMIT_NPROC applies to it.
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        _set_limits(spec["limits"], address_space_base, cuda, dedicated_uid)
        if task == "script":
            script.run(spec, emit)
        else:
            trainer.run(task, spec, split, emit, t0)
    except BaseException as exc:
        try:
            emit(_failure("crash", f"worker setup failed: {type(exc).__name__}: {exc}",
                          tail(traceback.format_exc())))
        except BaseException:
            pass
    finally:
        os._exit(0)


# --- one job, seen from the zygote -----------------------------------------------------------

def _event_bytes_limit(spec, split):
    """The flood guard's bound: EVENT_BYTES_LIMIT, plus, for training, its predictions (trainer.py):
    the validation split's after every epoch and at the end, the test split's once, for each of the
    job's seeds. Without them a long run on a large validation split with many classes (CIFAR-100:
    2.5 MB an epoch) would pass the bound by doing its job."""
    if split is None:
        return EVENT_BYTES_LIMIT
    width = split.raw.prediction_width
    return (EVENT_BYTES_LIMIT + spec["together"] * (metrics.encoded_bytes(len(split.val), width) * (spec["recipe"]["epochs"] + 1)
                                                    + metrics.encoded_bytes(len(split.test), width)))


class _Job:
    def __init__(self, job_id, pid, read_fd, log_path, limits, t0, bytes_limit):
        self.id = job_id
        self.pid = pid
        self.pidfd = None
        self.read_fd = read_fd
        self.pipe_open = True
        # A bytearray grows in place: a flood without newlines must cost the guard linear time, not
        # a copy of everything pending per chunk (70 MB took over a minute that way on 2 cores).
        self.pending = bytearray()
        self.received = 0
        self.bytes_limit = bytes_limit
        self.log_path = log_path
        self.limits = limits
        self.t0 = t0
        self.terminal = None
        self.stop = None
        self.violation = None
        self.status = None
        self.rusage = None
        self.verdict_fd = None

    def log_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 16384))
                return tail(f.read().decode("utf-8", "replace"))
        except OSError:
            return ""

    def outcome(self):
        if self.violation is not None:
            # The root cause, whatever the model made of the error or reported afterwards.
            return _failure("sandbox_violation", self.violation, self.log_tail())
        if self.terminal is not None:
            return self.terminal
        if self.stop is not None:
            return self.stop
        return self._death()

    def _death(self):
        """Failure for a child that ended without a terminal event."""
        log = self.log_tail()
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            cpu = self.rusage.ru_utime + self.rusage.ru_stime
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= self.limits["cpu_seconds"]):
                return _failure("budget_overrun",
                                f"exceeded the CPU-time budget of {_seconds(self.limits['cpu_seconds'])}", log)
            if sig == signal.SIGKILL:
                return _failure("oom", "worker was killed with SIGKILL, most likely by the kernel's "
                                       "out-of-memory killer", log)
            if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                # Stopped from outside (the zygote cancels with SIGKILL): the host is going away, as a
                # cancelled or preempted Slurm job's every process is told at once, the job's own child
                # among them, often before this zygote hears its own signal. Retryable, as the runner
                # labels the zygote's own such end (worker.ts), so the bus trains the trial elsewhere;
                # a model that signals itself gets only the bus's bounded redeliveries.
                return _failure("runner_unavailable", f"worker stopped from outside with {name}", log)
            return _failure("crash", f"worker died with {name}", log)
        code = os.WEXITSTATUS(self.status)
        if code == 0:
            return _failure("crash", "worker exited without reporting a result", log)
        return _failure("crash", f"worker exited with status {code}", log)


class Zygote:
    def __init__(self, pidns):
        self.pidns = pidns and _in_bwrap_pid_namespace()
        if pidns and not self.pidns:
            _log("--pidns given but pid 1 is not bwrap: cleaning up by process group only")
        self.device = accel.probe()
        self.inbox = deque()
        self.stdin_buffer = b""
        self.stdin_open = True
        self.cache = OrderedDict()
        self.cache_limit = int(os.environ.get("RUNNER_DATASET_CACHE_MB", "2048")) * 2 ** 20
        # Where the referee publishes datasets (read-only here).
        self.data_root = os.environ.get("RUNNER_DATA", "/data")
        self.scratch_root, self.own_scratch = self._scratch_root()
        self._share_kernel_caches()
        _become_subreaper()

    def _share_kernel_caches(self):
        """Compiled kernels outlive the job that compiled them (its HOME goes with it): the CUDA
        driver's PTX JIT cache and torch's inductor and triton caches live in one folder per
        worker that every job's uid can write. ".cache" cannot be a job id, so no job's scratch
        folder replaces it. Jobs of one worker share it, as they share the worker's GPU."""
        cache = os.path.join(self.scratch_root, ".cache")
        os.makedirs(cache, exist_ok=True)
        os.chmod(cache, 0o1777)
        for var, sub in (("CUDA_CACHE_PATH", "cuda"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                         ("TRITON_CACHE_DIR", "triton")):
            os.environ.setdefault(var, os.path.join(cache, sub))

    @staticmethod
    def _scratch_root():
        root = os.environ.get("RUNNER_SCRATCH")
        if root:
            os.makedirs(root, exist_ok=True)
            return root, False
        if os.path.isdir("/scratch"):
            return "/scratch", False
        root = tempfile.mkdtemp(prefix="runner-scratch-")
        os.chmod(root, 0o711)
        return root, True

    # stdin

    def _read_stdin(self):
        chunk = os.read(0, 1 << 16)
        if not chunk:
            self.stdin_open = False
            return
        *lines, self.stdin_buffer = (self.stdin_buffer + chunk).split(b"\n")
        self.inbox.extend(line for line in lines if line.strip())

    @staticmethod
    def _parse(line):
        try:
            message = json.loads(line)
        except ValueError as exc:
            _log(f"ignoring a line that is not JSON ({exc}): {line[:200]!r}")
            return None
        if not isinstance(message, dict):
            _log(f"ignoring a message that is not an object: {line[:200]!r}")
            return None
        return message

    def serve(self):
        send({"type": "ready", "device": {**self.device, "sandboxed": self.pidns}})
        try:
            while True:
                while not self.inbox and self.stdin_open:
                    select.select([0], [], [])
                    self._read_stdin()
                if not self.inbox:
                    return
                message = self._parse(self.inbox.popleft())
                if message is None:
                    continue
                if message.get("type") == "run":
                    self._run(message)
                elif message.get("type") not in ("cancel", "verdict"):  # either for a finished job is normal
                    _log(f"ignoring a message of type {message.get('type')!r}")
        finally:
            if self.own_scratch:
                shutil.rmtree(self.scratch_root, ignore_errors=True)

    # jobs

    def _finish(self, job_id, event, t0):
        send({"type": "event", "job_id": job_id, "event": event})
        send({"type": "done", "job_id": job_id, "seconds": time.monotonic() - t0})

    def _run(self, message):
        t0 = time.monotonic()
        job_id = message.get("job_id")
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            _log(f"refusing job id {job_id!r}: expected 1-200 of [A-Za-z0-9._:-]")
            if isinstance(job_id, str):
                self._finish(job_id, _failure("invalid_config", f"invalid job id {job_id!r}"), t0)
            return
        task = message.get("task")
        try:
            spec = specs.validate(task, message.get("spec"))
            split = self._split(spec) if task == "train" else None
            event = self._supervise(job_id, task, spec, split, t0)
        except TaskFailure as failure:
            event = failure.event()
        except Exception as exc:  # a bug of the runner: report it and keep serving
            _log(traceback.format_exc())
            event = _failure("crash", f"runner error: {type(exc).__name__}: {exc}", tail(traceback.format_exc()))
        self._finish(job_id, event, t0)

    def _split(self, spec):
        """The job's split as the referee published it: inputs and indices, no labels."""
        key = spec["dataset_id"]
        raw = self.cache.get(key)
        if raw is None:
            raw = datasets.load_published(self.data_root, key)
            self.cache[key] = raw
            while len(self.cache) > 1 and sum(r.nbytes for r in self.cache.values()) > self.cache_limit:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        return datasets.published_split(raw, self.data_root, spec["split_id"])

    def _supervise(self, job_id, task, spec, split, t0):
        limits = spec["limits"]
        if time.monotonic() - t0 >= limits["wall_seconds"]:
            raise TaskFailure("budget_overrun", f"loading the dataset exceeded the wall-clock budget of "
                                                f"{_seconds(limits['wall_seconds'])}")
        scratch = self._make_scratch(job_id)
        try:
            weights = spec.get("weights", "")
            # A file for each of the job's seeds (<job id>.<i>) to keep or to start from, or the one to load.
            per_seed = [f"{job_id}.{i}" for i in range(spec.get("together", 1))]
            names = per_seed if weights == "keep" else [job_id] if weights else []
            spec = {**spec, "weights_fds": [self._job_file(name, weights) for name in names],
                    "init_fds": [self._job_file(name, "init") for name in per_seed] if spec.get("init") else [],
                    "labels_fd": self._job_file(job_id, "labels" if task == "train" else "")}
            verdict_read, verdict_write = os.pipe() if task == "train" and spec["verdicts"] else (None, None)
            spec["verdict_fd"] = verdict_read
            log_path = os.path.join(scratch, "log.txt")
            log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
            read_fd, write_fd = os.pipe()
            address_space = _address_space_bytes()
            pid = os.fork()
            if pid == 0:
                if verdict_write is not None:
                    os.close(verdict_write)
                _child_main(task, spec, split, t0, scratch, log_fd, write_fd, read_fd, address_space,
                            self.device["kind"] == "cuda")
            os.close(write_fd)
            os.close(log_fd)
            for fd in (*spec["weights_fds"], *spec["init_fds"], spec["labels_fd"], verdict_read):
                if fd is not None:
                    os.close(fd)
            job = _Job(job_id, pid, read_fd, log_path, limits, t0, _event_bytes_limit(spec, split))
            job.verdict_fd = verdict_write
            try:
                job.pidfd = os.pidfd_open(pid)
                self._watch(job)
            finally:
                self._end(job)
                if verdict_write is not None:
                    os.close(verdict_write)
            return job.outcome()
        finally:
            _remove_tree(scratch)

    def _job_file(self, job_id, kind):
        if not kind:
            return None
        folder, ext, flags = JOB_FILES[kind]
        os.makedirs(os.path.join(self.scratch_root, folder), exist_ok=True)
        try:
            return os.open(os.path.join(self.scratch_root, folder, f"{job_id}.{ext}"), flags | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            what = {"labels": "training labels", "init": "weights to start from"}.get(kind, "weights to load")
            raise TaskFailure("invalid_config", f"no {what} were given for this job") from None

    def _make_scratch(self, job_id):
        path = os.path.join(self.scratch_root, job_id)
        _remove_tree(path)
        os.mkdir(path, 0o700)
        if os.getuid() == 0:
            try:
                os.chown(path, NOBODY, NOBODY)
            except PermissionError:
                # The sandbox drops CAP_CHOWN: the directory stays root's, opened to the job's uid.
                os.chmod(path, 0o777)
        return path

    def _watch(self, job):
        """Returns once the child has exited, must be stopped, or lingers after its terminal event."""
        deadline = job.t0 + job.limits["wall_seconds"]
        linger_until = math.inf
        while True:
            self._handle_inbox(job)
            now = time.monotonic()
            if job.stop is not None or now >= linger_until:
                return
            if now >= deadline:
                job.stop = _failure("budget_overrun",
                                    f"exceeded the wall-clock budget of {_seconds(job.limits['wall_seconds'])}",
                                    job.log_tail())
                return
            readers = [job.pidfd] + [fd for fd, is_open in ((job.read_fd, job.pipe_open), (0, self.stdin_open))
                                     if is_open]
            ready = select.select(readers, [], [], min(deadline, linger_until) - now)[0]
            if job.read_fd in ready:
                self._read_events(job)
                if job.terminal is not None and linger_until == math.inf:
                    linger_until = time.monotonic() + EXIT_GRACE_S
            if 0 in ready:
                self._read_stdin()
                if not self.stdin_open:
                    job.stop = _failure("crash", "the runner closed the zygote's input")
            if job.pidfd in ready:
                return

    def _handle_inbox(self, job):
        while self.inbox:
            message = self._parse(self.inbox.popleft())
            if message is None:
                continue
            kind, job_id = message.get("type"), message.get("job_id")
            if kind == "cancel" and job_id == job.id:
                if job.stop is None:
                    job.stop = _failure("crash", "cancelled by caller")
            elif kind == "verdict" and job_id == job.id:
                self._pass_verdict(job, message)
            elif kind == "run" and isinstance(job_id, str) and job_id != job.id:
                self._finish(job_id, _failure("runner_unavailable",
                                              f"this worker is busy with job {job.id}"), time.monotonic())
            elif kind not in ("run", "cancel", "verdict"):
                _log(f"ignoring a message of type {kind!r}")

    @staticmethod
    def _pass_verdict(job, message):
        """A verdict on one of the job's epochs, to the child (trainer._BestEpoch). Never blocks the
        zygote: a child that stopped reading (it keeps its last epoch then) loses verdicts."""
        if job.verdict_fd is None:
            return
        line = json.dumps({k: message.get(k) for k in ("seed", "epoch", "best")}) + "\n"
        try:
            os.set_blocking(job.verdict_fd, False)
            os.write(job.verdict_fd, line.encode())
        except (BlockingIOError, BrokenPipeError):
            pass

    def _read_events(self, job, drain=False):
        while True:
            try:
                chunk = os.read(job.read_fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                job.pipe_open = False
                return
            job.received += len(chunk)
            if b"\n" in chunk:
                *lines, rest = (job.pending + chunk).split(b"\n")
                job.pending = bytearray(rest)
                for line in lines:
                    self._accept_event(job, line)
            else:
                job.pending += chunk
            if job.received > job.bytes_limit and job.stop is None and job.terminal is None:
                job.stop = _failure("sandbox_violation", f"the worker wrote more than "
                                    f"{job.bytes_limit >> 20} MB to its event pipe", job.log_tail())
                return
            if not drain:
                return

    def _accept_event(self, job, line):
        if job.terminal is not None or job.stop is not None:
            return
        try:
            event = json.loads(line, parse_constant=_reject_constant)
        except ValueError as exc:
            _log(f"job {job.id}: ignoring a malformed event ({exc}): {line[:200]!r}")
            return
        kind = event.get("kind") if isinstance(event, dict) else None
        if kind == "violation":  # policy.py: the first breach ends the job
            job.violation = str(event.get("message", "the model breached the sandbox's policy"))[:1000]
            job.stop = _failure("sandbox_violation", job.violation)
        elif kind in TERMINAL_KINDS:
            if kind == "failure" and event.get("label") not in LABELS:
                event = _failure("crash", f"the worker reported an unknown failure label {event.get('label')!r}: "
                                          f"{event.get('message')}", str(event.get("traceback", "")))
            job.terminal = event
        elif kind in PROGRESS_KINDS:
            send({"type": "event", "job_id": job.id, "event": event})
        else:
            _log(f"job {job.id}: ignoring an event of kind {kind!r}")

    def _end(self, job):
        """Kills what is left of the job, reaps it, and collects the events still in the pipe."""
        # The child is not reaped yet, so its pid (and so its group id) cannot have been reused.
        _kill(job.pid, group=True)
        _kill(job.pid)
        _, job.status, job.rusage = os.wait4(job.pid, 0)
        if job.pidfd is not None:
            os.close(job.pidfd)
        self._kill_leftovers(job.pid)
        os.set_blocking(job.read_fd, False)
        self._read_events(job, drain=True)
        os.close(job.read_fd)

    def _kill_leftovers(self, pgid):
        """SIGKILLs the job's remaining processes until none is alive.

        In a private pid namespace everything but pid 1 (bwrap) and the zygote belongs
        to the job, so kill(-1) catches processes that left the job's session. Outside
        one, kill(-1) would hit the whole user session: there the zygote kills the job's
        process group and its own children (orphans re-parent to it, a subreaper).
        """
        me = os.getpid()
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while True:
            if self.pidns:
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                survivors = [pid for pid, _, _ in _processes() if pid not in (1, me)]
            else:
                _kill(pgid, group=True)
                survivors = [pid for pid, ppid, group in _processes()
                             if pid != me and (group == pgid or ppid == me)]
                for pid in survivors:
                    _kill(pid)
            _reap()
            if not survivors:
                return
            if time.monotonic() > deadline:
                _log(f"processes still alive after SIGKILL: {survivors}")
                return
            time.sleep(0.01)


def main():
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        Zygote(pidns="--pidns" in sys.argv[1:]).serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
