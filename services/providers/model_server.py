"""An OpenAI-compatible server chosen at run time, from the web app's Settings page: Ollama, llama.cpp's server,
vLLM, or any server speaking ``/v1/chat/completions``.

The choice is a small JSON file (``DOCUTHINKER_MODEL_SERVER_FILE``; the launcher gives every process the same one,
``<data_dir>/settings/model-server.json``, 0600 since it may hold a key). Every process's router has the provider
``openai`` backed by it (``ConfiguredServerProvider``), offered for a task only while the file names a server, so
the local model stays the default and a server saved on the page serves the next call in every service, without a
restart. A provider configured by the environment (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``) takes precedence and the
page shows it read-only. The file is read again when it changes (its modification time), at most once a second.
"""

from __future__ import annotations

import json
import os
import pathlib
import threading
import time
from collections.abc import AsyncGenerator
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

import httpx

from services.providers.base import GenerationRequest, GenerationResult, StreamEvent
from services.providers.pricing import FREE, Price, PriceTable
from services.runtime.errors import FailedPrecondition, FieldViolation, InvalidArgument

NAME = "openai"
DEFAULT_CONTEXT_WINDOW = 8192
PROBE_TIMEOUT_S = 5.0
_NO_KEY = "not-needed"  # compatible servers accept any key; the SDK insists on one


@dataclass(frozen=True)
class ModelServer:
    base_url: str
    model: str
    api_key: str = ""
    context_window: int = DEFAULT_CONTEXT_WINDOW


def check(server: ModelServer) -> ModelServer:
    """The server with its URL normalised; INVALID_ARGUMENT naming the bad fields."""
    violations = []
    url = server.base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        violations.append(FieldViolation("base_url", "an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1"))
    if not server.model.strip():
        violations.append(FieldViolation("model", "the model's name on that server, e.g. llama3.2"))
    if not 512 <= server.context_window <= 2_000_000:
        violations.append(FieldViolation("context_window", "512 to 2000000 tokens"))
    if violations:
        raise InvalidArgument("invalid model server", reason="INVALID_MODEL_SERVER", violations=violations)
    return ModelServer(url, server.model.strip(), server.api_key.strip(), server.context_window)


async def probe(server: ModelServer) -> list[str]:
    """The models the server lists (``GET {base_url}/models``); FAILED_PRECONDITION when it does not answer so."""
    headers = {"Authorization": f"Bearer {server.api_key}"} if server.api_key else {}
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S) as client:
            reply = await client.get(f"{server.base_url}/models", headers=headers)
        reply.raise_for_status()
        return sorted(str(m.get("id", "")) for m in reply.json().get("data", []) if isinstance(m, dict))
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise FailedPrecondition(
            f"the model server at {server.base_url} did not list its models (GET /models): {exc or type(exc).__name__}",
            reason="MODEL_SERVER_UNREACHABLE", metadata={"base_url": server.base_url}) from None


class ModelServerFile:
    """The chosen server, kept in one file; ``read`` is cheap enough for every call (stat at most once a second)."""

    def __init__(self, path: pathlib.Path, clock=time.monotonic) -> None:
        self.path = pathlib.Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._checked = -1e9
        self._stamp: float | None = None
        self._server: ModelServer | None = None

    def read(self) -> ModelServer | None:
        with self._lock:
            now = self._clock()
            if now - self._checked < 1.0:
                return self._server
            self._checked = now
            try:
                stamp = self.path.stat().st_mtime_ns
            except OSError:
                self._stamp, self._server = None, None
                return None
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._server = ModelServer(**json.loads(self.path.read_text()))
                except (OSError, ValueError, TypeError):
                    self._server = None  # a torn or foreign file: no server until it is written again
            return self._server

    def write(self, server: ModelServer | None) -> None:
        """Saves ``server`` (readable by this user alone: it may hold a key); None forgets it."""
        with self._lock:
            if server is None:
                self.path.unlink(missing_ok=True)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                temporary = self.path.with_suffix(".tmp")
                descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(descriptor, "w") as out:
                    out.write(json.dumps(asdict(server)))
                os.replace(temporary, self.path)  # readers see the old file or the new, never half
            self._checked = -1e9


class _ServerPrices(PriceTable):
    """A server of your own costs nothing per token (whatever its model's name matches in the price table)."""

    def price_of(self, model: str) -> Price:
        return FREE


class ConfiguredServerProvider:
    """The provider ``openai`` on the server the file names; ``available()`` while it names one."""

    name = NAME

    def __init__(self, file: ModelServerFile, prices: PriceTable, timeout_s: float) -> None:
        self._file = file
        self._prices = _ServerPrices(prices.prices, prices.context_windows)
        self._timeout_s = timeout_s
        self._built: tuple[ModelServer, object] | None = None

    def available(self) -> bool:
        return self._file.read() is not None

    def _provider(self):
        server = self._file.read()
        if server is None:
            raise FailedPrecondition("no model server is configured any more", reason="NO_MODEL_SERVER")
        if self._built is None or self._built[0] != server:
            from services.providers.openai_provider import OpenAIProvider

            provider = OpenAIProvider(api_key=server.api_key or _NO_KEY, model=server.model, prices=self._prices,
                                      base_url=server.base_url, timeout_s=self._timeout_s)
            provider.context_window = server.context_window
            self._built = (server, provider)
        return self._built[1]

    # Read from the file at each use (another process may have changed it); settable as the Provider protocol
    # asks, as an override of what the file says.
    _model: str | None = None
    _context_window: int | None = None

    @property
    def model(self) -> str:
        server = self._file.read()
        return self._model or (server.model if server else "")

    @model.setter
    def model(self, value: str) -> None:
        self._model = value

    @property
    def context_window(self) -> int:
        server = self._file.read()
        return self._context_window or (server.context_window if server else DEFAULT_CONTEXT_WINDOW)

    @context_window.setter
    def context_window(self, value: int) -> None:
        self._context_window = value

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        return await self._provider().generate(request)

    def stream(self, request: GenerationRequest) -> AsyncGenerator[StreamEvent, None]:
        return self._provider().stream(request)
