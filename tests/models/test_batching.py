"""Micro-batching: concurrent callers share forward passes and each gets its own rows."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from services.models.batching import MicroBatcher


class GatedEncoder:
    """Rows are (len(text), index of the text in its call); the first call waits for ``release``."""

    dimension = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(30)
        if any(t == "boom" for t in texts):
            raise ValueError("cannot embed boom")
        return np.array([[len(t), i] for i, t in enumerate(texts)], dtype=np.float32)


def _queued(batcher: MicroBatcher, n: int) -> None:
    """Blocks until ``n`` requests wait in the queue (an event-free queue offers no callback)."""
    for _ in range(3000):
        if batcher._queue.qsize() >= n:
            return
        threading.Event().wait(0.01)
    pytest.fail(f"{n} requests never queued")


def test_requests_arriving_during_a_pass_share_the_next_one() -> None:
    inner = GatedEncoder()
    batcher = MicroBatcher(inner, wait_s=0.0, max_texts=64)
    requests = [["first"], ["a", "bb"], ["ccc"], ["dddd", "eeeee", "ffffff"]]
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.encode, requests[0])
        assert inner.entered.wait(30)
        rest = [pool.submit(batcher.encode, r) for r in requests[1:]]
        _queued(batcher, 3)
        inner.release.set()
        results = [first.result(), *(f.result() for f in rest)]
    assert len(inner.calls) == 2 and sorted(map(len, inner.calls)) == [1, 6]
    for request, rows in zip(requests, results, strict=True):
        assert rows[:, 0].tolist() == [len(t) for t in request]  # each caller gets its own rows, in order


def test_a_failing_request_fails_only_its_caller() -> None:
    inner = GatedEncoder()
    batcher = MicroBatcher(inner, wait_s=0.0, max_texts=64)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(batcher.encode, ["warm"])
        assert inner.entered.wait(30)
        good, bad = pool.submit(batcher.encode, ["fine"]), pool.submit(batcher.encode, ["boom"])
        _queued(batcher, 2)
        inner.release.set()
        assert first.result()[:, 0].tolist() == [4]
        assert good.result()[:, 0].tolist() == [4]
        with pytest.raises(ValueError, match="boom"):
            bad.result()


def test_a_full_batch_skips_the_queue() -> None:
    inner = GatedEncoder()
    inner.release.set()
    batcher = MicroBatcher(inner, wait_s=10.0, max_texts=2)
    assert batcher.encode(["xy", "z"])[:, 0].tolist() == [2, 1]
    assert not batcher._threads


def test_a_request_queued_behind_a_pass_goes_next_without_waiting_the_bound() -> None:
    """Under load the bound is not waited: what queued during a pass is taken at once."""
    inner = GatedEncoder()
    batcher = MicroBatcher(inner, wait_s=30.0, max_texts=64)
    first = batcher.submit(["first"])  # an idle batcher waits the bound for company: cut short by max_texts below
    batcher._queue.put((["x"] * 63, Future()))
    assert inner.entered.wait(30)
    queued = batcher.submit(["queued"])
    _queued(batcher, 1)
    inner.release.set()
    assert first.result(30)[:, 0].tolist() == [5]
    assert queued.result(5)[:, 0].tolist() == [6]  # not the 30 s bound
    assert len(inner.calls) == 2


async def test_an_awaiting_caller_holds_no_thread_and_a_cancelled_one_is_dropped() -> None:
    import asyncio

    inner = GatedEncoder()
    batcher = MicroBatcher(inner, wait_s=0.0, max_texts=64)
    first = asyncio.ensure_future(asyncio.wrap_future(batcher.submit(["warm"])))
    await asyncio.to_thread(inner.entered.wait, 30)
    gone_request = batcher.submit(["gone"])
    gone = asyncio.ensure_future(asyncio.wrap_future(gone_request))
    kept = asyncio.ensure_future(asyncio.wrap_future(batcher.submit(["kept"])))
    await asyncio.to_thread(_queued, batcher, 2)
    gone.cancel()
    for _ in range(3000):  # the loop hands the cancellation on to the queued request in a later callback
        if gone_request.cancelled():
            break
        await asyncio.sleep(0.01)
    assert gone_request.cancelled()
    inner.release.set()
    assert (await first)[:, 0].tolist() == [4]
    assert (await kept)[:, 0].tolist() == [4]
    assert inner.calls[1] == ["kept"]  # the cancelled request's texts were never encoded


def test_an_embedder_with_two_streams_gets_a_second_pass_started_while_the_first_runs() -> None:
    inner = GatedEncoder()
    inner.streams = 2  # type: ignore[attr-defined]
    batcher = MicroBatcher(inner, wait_s=0.0, max_texts=64)
    first = batcher.submit(["first"])
    assert inner.entered.wait(30)
    second = batcher.submit(["second"])
    assert second.result(30)[:, 0].tolist() == [6]  # not queued behind the gated pass
    assert not first.done()
    inner.release.set()
    assert first.result(30)[:, 0].tolist() == [5]
    assert len(batcher._threads) == 2


class QueuedPassesEncoder:
    """Queues its passes (``start``); once a call is queued, ``wait_for_room`` holds until ``room`` is set,
    as the ONNX embedder does until every queued pass has started."""

    dimension = 2
    streams = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.room = threading.Event()

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        return self.start(texts)()

    def start(self, texts: list[str]):
        self.calls.append(list(texts))
        rows = np.array([[len(t), i] for i, t in enumerate(texts)], dtype=np.float32)
        return lambda: rows

    def wait_for_room(self) -> None:
        if self.calls:
            assert self.room.wait(30)


def test_requests_arriving_while_passes_are_queued_make_one_call_once_they_run() -> None:
    inner = QueuedPassesEncoder()
    batcher = MicroBatcher(inner, wait_s=0.0, max_texts=64)
    assert batcher.submit(["first"]).result(30)[:, 0].tolist() == [5]
    later = [batcher.submit(texts) for texts in (["a", "bb"], ["ccc"], ["dddd"])]
    _queued(batcher, 3)  # neither dispatcher took them while the first call's passes wait to start
    assert inner.calls == [["first"]]
    inner.room.set()
    assert [f.result(30)[:, 0].tolist() for f in later] == [[1, 2], [3], [4]]
    assert inner.calls == [["first"], ["a", "bb", "ccc", "dddd"]]
