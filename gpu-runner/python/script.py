"""A short Python or bash script for the coder's tools, run from a job's child.

By the time run() is called the child has dropped privileges, set its rlimits
and made the job's scratch directory its working directory; the script runs as
a subprocess under all of that, in a fresh "work" directory holding the files
sent with the request. Paths stay relative: the scratch root above the job's
directory need not be searchable by the unprivileged uid.
"""

import os
import signal
import stat
import subprocess
import sys

from failures import Stage, TaskFailure

WORK_DIR = "work"
OUTPUT_FILE = "output.txt"
OUTPUT_BYTES = 16 << 10
FILE_BYTES = 64 << 10
FILES_BYTES = 1 << 20
# sys.executable rather than a fixed path: the runner's python is the one with torch
# (a conda or venv python when RUNNER_PYTHON says so), and it is mounted in the sandbox.
INTERPRETERS = {"python": [sys.executable, "-c"], "bash": ["/bin/bash", "-c"]}


def _write_files(files):
    for rel, text in files.items():
        path = os.path.join(WORK_DIR, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _output_tail(out):
    size = os.fstat(out.fileno()).st_size
    out.seek(max(0, size - OUTPUT_BYTES))
    text = out.read().decode("utf-8", "replace")
    if size > OUTPUT_BYTES:
        return f"[... {size - OUTPUT_BYTES} earlier bytes of output dropped]\n{text}"
    return text


def _read_text(name, dir_fd):
    """The file's text, or None for links, non-files, large or binary files."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > FILE_BYTES:
            return None
        data = f.read(FILE_BYTES + 1)
    if len(data) > FILE_BYTES or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _collect(sent):
    """New or changed text files under the work directory, in path order, within the size caps.

    fwalk never follows a symbolic link, not even one the script put in place of the work
    directory itself.
    """
    files, total = {}, 0
    prefix = WORK_DIR + os.sep
    for top, dirs, names, dir_fd in os.fwalk(WORK_DIR):
        dirs.sort()
        for name in sorted(names):
            rel = os.path.join(top, name)[len(prefix):]
            text = _read_text(name, dir_fd)
            if text is None or sent.get(rel) == text:
                continue
            size = len(text.encode("utf-8"))
            if total + size > FILES_BYTES:
                continue
            files[rel] = text
            total += size
    return files


def _run(spec):
    with Stage("invalid_config", "writing the script's files"):
        os.mkdir(WORK_DIR)
        _write_files(spec["files"])
    with Stage("crash", "running the script"):
        timed_out = False
        # Read back through this descriptor: the script may delete or replace the file.
        with open(OUTPUT_FILE, "w+b") as out:
            proc = subprocess.Popen(INTERPRETERS[spec["language"]] + [spec["source"]], cwd=WORK_DIR,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=spec["timeout_s"])
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                code = proc.wait()
            output = _output_tail(out)
        return {
            "kind": "script",
            # As a shell reports it: 128 + N for a death by signal N.
            "exit_code": code if code >= 0 else 128 - code,
            "stdout": output,
            "timed_out": timed_out,
            "files": _collect(spec["files"]),
        }


def run(spec, emit):
    """Emits exactly one terminal event: the script's outcome, or why it could not run."""
    try:
        event = _run(spec)
    except TaskFailure as failure:
        event = failure.event()
    emit(event)
