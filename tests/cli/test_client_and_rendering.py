"""The CLI's pieces that need no server: exit-code mapping, gateway errors, upload progress, citation places."""

from __future__ import annotations

import pathlib

import httpx
import pytest

from docuthinker_cli.client import GatewayError, content_type_of, error_from_response, error_from_status
from docuthinker_cli.exit_codes import ExitCode, for_http_status, table
from docuthinker_cli.progress import percent
from docuthinker_cli.render import where

NOT_FOUND = {"code": 5, "message": "document abc not found",
             "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "DOCUMENT_NOT_FOUND"}]}


@pytest.mark.parametrize(("status", "code"), [(400, ExitCode.ERROR), (401, ExitCode.AUTH), (403, ExitCode.AUTH),
                                              (404, ExitCode.NOT_FOUND), (429, ExitCode.RATE_LIMITED),
                                              (500, ExitCode.ERROR), (503, ExitCode.UNAVAILABLE)])
def test_http_statuses_map_to_exit_codes(status, code):
    assert for_http_status(status) is code


def test_a_status_body_becomes_a_gateway_error_with_its_reason():
    error = error_from_response(httpx.Response(404, json=NOT_FOUND))
    assert (error.exit_code, error.http_status, error.rpc_code, error.reason) == (
        ExitCode.NOT_FOUND, 404, 5, "DOCUMENT_NOT_FOUND")
    assert str(error) == "document abc not found (DOCUMENT_NOT_FOUND)"
    assert error.as_json()["error"]["exit_code"] == 3


def test_envoys_plain_text_503_and_an_in_band_stream_error():
    plain = error_from_response(httpx.Response(503, text="no healthy upstream"))
    assert plain.exit_code is ExitCode.UNAVAILABLE and "no healthy upstream" in plain.message
    in_band = error_from_status({"code": 3, "message": "unsupported file type"})
    assert isinstance(in_band, GatewayError) and in_band.exit_code is ExitCode.ERROR


def test_upload_progress_positions_follow_the_stages():
    assert percent({"stage": "INGEST_STAGE_RECEIVED", "done": "10", "total": "10"}) == (5, "received")
    assert percent({"stage": "INGEST_STAGE_EMBEDDED", "done": "5", "total": "10"}) == (65, "embedded 5/10")
    assert percent({"stage": "INGEST_STAGE_OCR", "done": "1", "total": "2"})[0] == 17.5
    assert percent({"stage": "INGEST_STAGE_INDEXED"}) == (95, "indexed")


def test_where_a_citation_points():
    assert where({"filename": "a.pdf", "page": 3}) == "a.pdf, p. 3"
    sheet = {"filename": "s.xlsx", "sheet_name": "Q1", "row_start": 4, "row_end": 6}
    assert where(sheet) == "s.xlsx, sheet Q1, rows 4-6"
    assert where({"filename": "n.md", "heading_path": ["Intro", "Scope"]}) == "n.md, Intro › Scope"


def test_content_types_and_the_exit_code_table():
    assert content_type_of(pathlib.Path("x.md")) == "text/markdown"
    assert content_type_of(pathlib.Path("x.pdf")) == "application/pdf"
    assert "| 3 | `NOT_FOUND` |" in table()


def test_the_docs_document_these_exit_codes():
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    assert table() in page, "docs/cli.md's exit-code table differs from docuthinker_cli.exit_codes.table()"
