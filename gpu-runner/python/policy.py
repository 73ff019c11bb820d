"""The sandbox's policy, seen from inside a job: what model code may not do.

The sandbox stops a breach (no network, a process limit, a read-only system),
but model code can catch the error and raise another, or carry on and report
a result: the breach would surface under the wrong label, or none. A Python
audit hook (PEP 578: it sees the attempt before the system call, and code
cannot remove it) reports the first breach at once on the job's event pipe;
the zygote then labels the job `sandbox_violation`, whatever it ends with.

Only attempts made with model code on the stack count: the trainer and the
libraries it calls on its own behalf are not policed. Breaches:
- any network use (name lookups, connecting, binding or sending on a socket);
- starting a process (a fork bomb starts with one);
- writing, creating, moving or deleting a file outside the job's scratch folder.
"""

import os
import sys

_NETWORK = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                      "socket.gethostbyname", "socket.gethostbyaddr"})
_PROCESS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system",
                      "subprocess.Popen", "pty.spawn"})
# Events whose arguments start with the path(s) they change.
_PATHS = {"os.remove": 1, "os.rename": 2, "os.mkdir": 1, "os.rmdir": 1, "os.chmod": 1, "os.symlink": 2,
          "os.link": 2, "os.truncate": 1, "shutil.rmtree": 1, "shutil.move": 2, "shutil.copyfile": 2}
# Every event the hook looks at; the hook runs for every audited event (imports, compiles, ...).
_WATCHED = _NETWORK | _PROCESS | {"open"} | frozenset(_PATHS)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_ALLOWED_FILES = ("/dev/null",)

_state = {"emit": None, "model_file": None, "scratch": None, "reported": False}


def _from_model():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == _state["model_file"]:
            return True
        frame = frame.f_back
    return False


def _outside_scratch(path):
    if isinstance(path, int):  # an open file descriptor
        return False
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    scratch = _state["scratch"]
    return real not in _ALLOWED_FILES and real != scratch and not real.startswith(scratch + os.sep)


def _breach(event, args):
    if event in _NETWORK:
        return f"network use ({event})"
    if event in _PROCESS:
        return f"starting a process ({event})"
    if event == "open":
        path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & _WRITE_FLAGS)
        if writes and _outside_scratch(path):
            return f"writing {os.fsdecode(path)}, outside the job's scratch folder"
        return None
    for path in args[:_PATHS.get(event, 0)]:
        if _outside_scratch(path):
            return f"changing {os.fsdecode(path)} ({event}), outside the job's scratch folder"
    return None


def _hook(event, args):
    if event not in _WATCHED or _state["reported"] or _state["emit"] is None:
        return
    what = _breach(event, args)
    if what is None or not _from_model():
        return
    _state["reported"] = True
    _state["emit"]({"kind": "violation", "message": f"the model breached the sandbox's policy: {what}"})


_installed = []


def police(emit, model_file, scratch):
    """Reports the model's first breach through `emit` from now on (one hook per process)."""
    _state.update(emit=emit, model_file=model_file, scratch=os.path.realpath(scratch), reported=False)
    if not _installed:
        sys.addaudithook(_hook)
        _installed.append(True)
