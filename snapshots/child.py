"""Run a snapshot's writing in a forked child process, as Redis writes its background saves: the child sees the parent's
memory as it was at the fork (an immutable image needs no copy), encodes and writes, and exits; the parent waits
without holding the GIL.

Why: a serving node that writes a snapshot of 500k ACLs itself spends seconds of CPU holding the GIL a step at a
time, and the event loop answering brokers' decisions falls behind. The fork itself is one stall of the parent (the
kernel copies the page tables: about 25 ms per GB of memory here), once per snapshot.

The child runs only the given function: it resets the signal handlers it inherited (a SIGTERM meant for serve must not
reach serve's event loop through the inherited wakeup descriptor), dies with its parent (a killed serve leaves no
writer behind), stops the garbage collector (which would touch, and copy, every page), and ends with `os._exit`
(no cleanup of the parent's objects, no flush of the parent's buffers). Its outcome comes back through a pipe:
the function's int result, or its error (an OSError keeps its errno, so the caller still names it).
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import warnings
from collections.abc import Callable

from kraftacl.metadata_log.pace import stop_pacing

_PR_SET_PDEATHSIG = 1


class ChildError(RuntimeError):
    """The child failed with an error that is not an OSError (its type and message), or did not end normally."""


def available() -> bool:
    """True where a child can be forked (POSIX)."""
    return hasattr(os, "fork")


def run_in_child(work: Callable[[], int]) -> int:
    """`work()` in a forked child; its result, or its error raised here (OSError with the child's errno)."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+ warns about fork with threads running
            pid = os.fork()
    except OSError:  # EAGAIN, ENOMEM: the caller names it
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # pragma: no cover - the child process (coverage is not collected there)
        _child(work, read_end, write_end, parent)
    os.close(write_end)
    try:
        chunks = []
        while piece := os.read(read_end, 65536):  # blocks without the GIL until the child writes and exits
            chunks.append(piece)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    return _outcome(b"".join(chunks).decode("utf-8", "replace"), os.waitstatus_to_exitcode(status))


def _child(work: Callable[[], int], read_end: int, write_end: int, parent: int) -> None:  # pragma: no cover
    code = 1
    try:
        os.close(read_end)
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        _die_with(parent)
        gc.disable()
        stop_pacing()  # nothing else runs in this process: no rest between steps
        message = f"ok\n{work()}"
        code = 0
    except OSError as exc:
        message = f"oserror\n{exc.errno or 0}\n{exc.strerror or exc}"
    except BaseException as exc:
        message = f"error\n{type(exc).__name__}: {exc}"
    try:
        os.write(write_end, message.encode("utf-8", "replace")[:60000])
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:  # pragma: no cover - the child process
    """Linux: the kernel kills this child when the thread that forked it ends; elsewhere nothing."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (AttributeError, OSError):
        return
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(1)


def _outcome(message: str, exit_code: int) -> int:
    kind, _, rest = message.partition("\n")
    if kind == "ok" and exit_code == 0:
        return int(rest)
    if kind == "oserror":
        number, _, text = rest.partition("\n")
        raise OSError(int(number), text)
    if kind == "error":
        raise ChildError(f"the snapshot writer failed: {rest}")
    raise ChildError(f"the process writing the snapshot ended with exit code {exit_code} and no outcome")
