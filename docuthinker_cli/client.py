"""A typed client of the gateway's REST surface (httpx), with its SSE streams (httpx-sse) and one error type."""

from __future__ import annotations

import json
import mimetypes
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse

from docuthinker_cli.exit_codes import ExitCode, for_http_status, for_rpc_code

DEFAULT_GATEWAY = "http://127.0.0.1:8080"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
# Types the gateway's parsers know by extension, where the platform's mimetypes table may not.
_CONTENT_TYPES = {".md": "text/markdown", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
                  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}


@dataclass
class GatewayError(Exception):
    """A failed call: HTTP status (None when the gateway was not reached), google.rpc code, reason, message."""

    message: str
    exit_code: ExitCode
    http_status: int | None = None
    rpc_code: int | None = None
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.message} ({self.reason})" if self.reason else self.message

    def as_json(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "reason": self.reason, "http_status": self.http_status,
                          "code": self.rpc_code, "exit_code": int(self.exit_code)}}


def _reason(status: dict[str, Any]) -> str:
    for detail in status.get("details") or ():
        if isinstance(detail, dict) and detail.get("@type") == _ERROR_INFO:
            return str(detail.get("reason", ""))
    return ""


def error_from_status(status: dict[str, Any]) -> GatewayError:
    """An in-band ``google.rpc.Status`` (a stream's ``error`` event)."""
    code = int(status.get("code", 2))
    return GatewayError(status.get("message") or "the server reported an error", for_rpc_code(code),
                        rpc_code=code, reason=_reason(status))


def error_from_response(response: httpx.Response) -> GatewayError:
    try:
        body = json.loads(response.read() or b"{}")
    except ValueError:
        body = None
    if isinstance(body, dict) and "message" in body:
        error = error_from_status(body)
        error.http_status, error.exit_code = response.status_code, for_http_status(response.status_code)
        return error
    text = response.text.strip() or response.reason_phrase
    return GatewayError(f"HTTP {response.status_code}: {text[:300]}", for_http_status(response.status_code),
                        http_status=response.status_code)


def content_type_of(path: pathlib.Path) -> str:
    return _CONTENT_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


class Gateway:
    """One gateway (base URL, optional bearer token and tenant); every method raises ``GatewayError``."""

    def __init__(self, base_url: str = DEFAULT_GATEWAY, token: str | None = None, tenant: str | None = None,
                 timeout_s: float = 300.0) -> None:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if tenant:
            headers["x-tenant-id"] = tenant
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers,
                                  timeout=httpx.Timeout(timeout_s, connect=5.0))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -----------------------------------------------------------------
    def _unreachable(self, exc: httpx.TransportError) -> GatewayError:
        return GatewayError(f"cannot reach the gateway at {self.base_url}: {exc or type(exc).__name__}",
                            ExitCode.UNAVAILABLE)

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        if response.status_code >= 400:
            raise error_from_response(response)
        try:
            return response.json()
        except ValueError:
            raise GatewayError(f"the gateway answered {path} with non-JSON", ExitCode.ERROR,
                               http_status=response.status_code) from None

    def _stream(self, method: str, path: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """The JSON events of an SSE stream; an in-band ``error`` event is raised, not yielded."""
        try:
            with connect_sse(self._http, method, path, **kwargs) as source:
                if source.response.status_code >= 400:
                    raise error_from_response(source.response)
                for sse in source.iter_sse():
                    if not sse.data:
                        continue
                    event = json.loads(sse.data)
                    if "error" in event:
                        raise error_from_status(event["error"])
                    yield event
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        except SSEError as exc:
            raise GatewayError(f"{path} did not answer with an event stream: {exc}", ExitCode.ERROR) from None

    # -- documents -----------------------------------------------------------------
    def upload(self, path: pathlib.Path) -> Iterator[dict[str, Any]]:
        """Progress events (``{"progress": {...}}``) of one upload, ending with ``{"done": IngestResult}``."""
        headers = {"Content-Type": content_type_of(path), "Accept": "text/event-stream"}
        yield from self._stream("POST", "/v1/documents", params={"filename": path.name},
                                content=path.read_bytes(), headers=headers)

    def documents(self, page_size: int = 100) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token = ""
        while True:
            params = {"page_size": page_size, **({"page_token": token} if token else {})}
            page = self._call("GET", "/v1/documents", params=params)
            found.extend(page.get("documents", []))
            token = page.get("next_page_token", "")
            if not token:
                return found

    def document(self, document_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/documents/{document_id}")["document"]

    def delete(self, document_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/documents/{document_id}")

    # -- answers and search --------------------------------------------------------
    def ask_stream(self, question: str, document_ids: list[str], *, agent: bool = False) -> Iterator[dict[str, Any]]:
        """``/v1/query:stream`` (answer deltas, citations, done) or ``/v1/agents/query:stream`` (node, done)."""
        path = "/v1/agents/query:stream" if agent else "/v1/query:stream"
        yield from self._stream("POST", path, json={"question": question, "document_ids": document_ids},
                                headers={"Accept": "text/event-stream"})

    def search(self, query: str, top_k: int, document_ids: list[str]) -> dict[str, Any]:
        return self._call("POST", "/v1/search", json={"query": query, "top_k": top_k, "document_ids": document_ids})

    # -- conversations ----------------------------------------------------------------
    def conversations(self, page_size: int = 200) -> list[dict[str, Any]]:
        """The caller's conversations, most recently used first."""
        return self._call("GET", "/v1/conversations", params={"page_size": page_size}).get("conversations", [])

    def conversation(self, conversation_id: str) -> dict[str, Any]:
        """A conversation and its turns (oldest first)."""
        return self._call("GET", f"/v1/conversations/{conversation_id}")

    def rename_conversation(self, conversation_id: str, title: str) -> dict[str, Any]:
        return self._call("PATCH", f"/v1/conversations/{conversation_id}", json={"title": title})["conversation"]

    def delete_conversation(self, conversation_id: str) -> bool:
        return bool(self._call("DELETE", f"/v1/conversations/{conversation_id}").get("deleted"))

    def ask_in(self, conversation_id: str, question: str, document_ids: list[str]) -> Iterator[dict[str, Any]]:
        """``/v1/conversations/{id}:ask`` ("-": a new one): conversation, resolved, answer deltas, citations, done."""
        yield from self._stream("POST", f"/v1/conversations/{conversation_id or '-'}:ask",
                                json={"question": question, "document_ids": document_ids},
                                headers={"Accept": "text/event-stream"})

    # -- NLP on a stored document ----------------------------------------------------
    def nlp(self, operation: str, document_id: str) -> dict[str, Any]:
        """``operation``: summary, key-ideas, entities or sentiment."""
        return self._call("POST", f"/v1/nlp/{operation}", json={"document_id": document_id})

    # -- graph and system --------------------------------------------------------------
    def graph_query(self, cypher: str, params: dict[str, Any], limit: int = 0) -> dict[str, Any]:
        return self._call("POST", "/v1/graph/query", json={"cypher": cypher, "params": params, "limit": limit})

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def costs(self) -> dict[str, Any]:
        return self._call("GET", "/v1/costs")
