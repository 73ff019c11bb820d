"""Failure labels and the mapping from Python exceptions onto them.

The label set is closed and shared by every component of the system (see
proto/research/v1/common.proto): the planner learns from labels, so an
exception must land on the label that names its cause, not on a generic one.
"""

import errno
import traceback

LABELS = frozenset({
    "invalid_config", "codegen_error", "shape_error", "crash", "oom",
    "nan_loss", "budget_overrun", "sandbox_violation", "runner_unavailable", "over_limit",
})

TRACEBACK_LINES = 30

_OOM_HINTS = (
    "out of memory", "can't allocate memory", "cannot allocate memory",
    "defaultcpuallocator", "std::bad_alloc",
)
_SHAPE_HINTS = (
    "shape", "size mismatch", "mat1 and mat2", "sizes of tensors",
    "expected input batch_size", "must match the size", "dimension out of range",
    "expected more than 1 value per channel", "channels, but got",
)
# EAGAIN: fork refused by RLIMIT_NPROC; EFBIG: a write past RLIMIT_FSIZE (Python ignores SIGXFSZ).
_SANDBOX_ERRNOS = {errno.EPERM, errno.EACCES, errno.EROFS, errno.ENETUNREACH, errno.EAFNOSUPPORT,
                   errno.EAGAIN, errno.EFBIG}
_SANDBOX_HINTS = ("can't start new thread",)  # thread creation refused by RLIMIT_NPROC


class TaskFailure(Exception):
    """A job outcome that is a labelled failure rather than a bug of the runner."""

    def __init__(self, label, message, tb=""):
        assert label in LABELS, label
        super().__init__(message)
        self.label = label
        self.message = message
        self.traceback = tb

    def event(self):
        return {"kind": "failure", "label": self.label, "message": self.message,
                "traceback": self.traceback}


def tail(text, lines=TRACEBACK_LINES):
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def classify(exc, default):
    """Label for an exception raised while the job was at a stage whose failures are `default`."""
    text = str(exc).lower()
    if isinstance(exc, MemoryError) or any(hint in text for hint in _OOM_HINTS):
        return "oom"
    if (isinstance(exc, OSError) and exc.errno in _SANDBOX_ERRNOS) or any(hint in text for hint in _SANDBOX_HINTS):
        return "sandbox_violation"
    if default == "crash" and isinstance(exc, (RuntimeError, ValueError, IndexError)) \
            and any(hint in text for hint in _SHAPE_HINTS):
        # A model can pass the two-sample probe and still break on a later batch
        # (hard-coded batch sizes, a last batch of another size).
        return "shape_error"
    return default


class Stage:
    """Turns any exception in the block into a TaskFailure with the stage's label.

        with Stage("codegen_error", "instantiating Net"):
            model = cls(**kwargs)
    """

    def __init__(self, label, what):
        self.label = label
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, TaskFailure):
            return False
        if not isinstance(exc, (Exception, SystemExit)):
            return False  # KeyboardInterrupt and friends are not the model's doing
        message = f"{self.what}: {type(exc).__name__}: {exc}".rstrip(": ")
        raise TaskFailure(classify(exc, self.label), message,
                          tail("".join(traceback.format_exception(kind, exc, tb)))) from exc
