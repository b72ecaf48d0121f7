"""The launcher's stop on SIGINT / SIGTERM survives a burst of signals.

The handler it replaced (``threading.Event.set``) hung this same script for good: a signal handled while
the main thread held the event's lock (in ``wait``, or in the previous handler) waited for that lock.
"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

from services.launcher.stop_signals import StopSignals

ROOT = pathlib.Path(__file__).resolve().parents[2]

BURST = """
import os, signal, threading
from services.launcher.stop_signals import StopSignals

stop = StopSignals().install()
done = []

def burst():
    for _ in range(20000):
        os.kill(os.getpid(), signal.SIGTERM)
    done.append(True)

sender = threading.Thread(target=burst)
sender.start()
while not done:  # the launcher's loop: wait, look, wait, while signals keep landing
    stop.wait(0.0001)
sender.join()
print("stopped", stop.requested)
"""


def test_a_burst_of_signals_stops_the_loop_and_never_hangs_it() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BURST], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # SIGTERM is what the script handles: only SIGKILL ends a hung one
        proc.communicate()
        raise AssertionError("the stop loop hung under a burst of SIGTERMs") from None
    assert proc.returncode == 0 and out.strip() == "stopped True"


def test_a_stop_is_requested_only_by_a_signal() -> None:
    stop = StopSignals()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop.install()
        assert not stop.wait(0.001) and not stop.requested
        signal.raise_signal(signal.SIGINT)  # handled in this (the main) thread before the call returns
        assert stop.requested and stop.wait(10.0)  # requested: no sleep
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
