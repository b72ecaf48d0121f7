"""Stop requests by SIGINT / SIGTERM that a burst of signals cannot deadlock.

Python runs a signal handler in the main thread between two bytecodes, wherever that thread is, so a
handler must not take a lock the main thread may hold. ``threading.Event.set`` does (its condition's
lock): a second signal landing while the first handler, or ``Event.wait`` itself, held it hung the
launcher for good with its services running (seen: Ctrl-C pressed twice, or a SIGTERM to the process
group that ``timeout`` or ``make`` forwarded too). Here the handler only appends to a list.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable


class StopSignals:
    def __init__(self) -> None:
        self._received: list[int] = []

    def install(self, signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM)) -> StopSignals:
        for sig in signals:
            signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, _frame) -> None:
        self._received.append(signum)  # no lock, no I/O: it may interrupt the main thread anywhere

    @property
    def requested(self) -> bool:
        return bool(self._received)

    def wait(self, timeout_s: float) -> bool:
        """Sleeps ``timeout_s`` unless a stop was requested; whether one was."""
        if not self._received:
            time.sleep(timeout_s)
        return self.requested
