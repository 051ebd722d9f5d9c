"""`python -m kraftacl.server.reader_main CONFIG`: the reader process a serve starts for its heavy reads
(`server.reader`): serve on CONFIG with JSON status lines, stopping as on SIGTERM when its stdin ends (the serve
that started it is gone), its log lines marked `[reader]`.

One process; the stdin watcher is a daemon thread.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

from kraftacl.authorizer.decision.audit import AUDIT_LOGGER
from kraftacl.authorizer.errors import ConfigError
from kraftacl.server.announce import Announcer
from kraftacl.server.config import load
from kraftacl.server.log_backend import ServeError
from kraftacl.server.process import serve, setup_logging
from kraftacl.server.reader import PRIVATE_PREFIX

NICE = 19  # where SCHED_IDLE is not offered: the lowest priority


def _yield_cpu() -> None:
    """The reader runs only on CPU time nobody else wants (Linux's SCHED_IDLE): a thread of serve that wakes takes a
    CPU from it at once, and Linux wakes serve's threads on a CPU that runs only the reader as on an idle one."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(NICE)


def _stop_when_parent_goes(out: Announcer) -> None:
    sys.stdin.buffer.read()
    out.closed = True  # its stdout went with it: the last status lines go to the log
    os.kill(os.getpid(), signal.SIGTERM)


class _Mark(logging.Filter):
    """Marks the reader's log lines, which share serve's stderr (not the audit lines: they stay Kafka's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != AUDIT_LOGGER.name:
            record.msg = f"[reader] {record.msg}"
        return True


def main(argv: list[str]) -> int:
    """Run the reader until its stdin ends or it is stopped; serve's exit code. Its private directory (its
    configuration's) is removed as it ends, whether the serve that started it is still there to do it or not."""
    private = Path(argv[1]).parent
    try:
        return _run(argv)
    finally:
        if private.name.startswith(PRIVATE_PREFIX):
            shutil.rmtree(private, ignore_errors=True)


def _run(argv: list[str]) -> int:
    _yield_cpu()  # before any thread starts: every thread of the reader inherits it
    out = Announcer(json_lines=True)
    threading.Thread(target=_stop_when_parent_goes, args=(out,), name="kraft-acl-reader-parent", daemon=True).start()
    try:
        config = load(Path(argv[1]))
        records = setup_logging(config)
        for handler in logging.getLogger().handlers:
            handler.addFilter(_Mark())
        code = serve(config, out)
        if not records.flush():
            os._exit(code)  # stderr does not take the records: an ordinary exit would wait for it for good
        return code
    except (ConfigError, ServeError) as exc:
        print(f"kraft-acl serve [reader]: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
