"""A background thread that calls one function at a fixed interval until stopped: how the shell follows a source
that has no tailer of its own (a running serve, Apache Kafka's metadata files).

The thread only calls `tick`; whatever `tick` shares with the shell's thread is its owner's to guard.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Poller:
    """Calls `tick()` every `interval_s` seconds on a daemon thread, from `start()` until `stop()`."""

    def __init__(self, tick: Callable[[], None], interval_s: float, name: str) -> None:
        self._tick = tick
        self._interval_s = interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Poller:
        """Start the thread; returns self."""
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            self._tick()

    def stop(self) -> None:
        """Stop and wait for a tick under way to finish."""
        self._stopped.set()
        self._thread.join()
