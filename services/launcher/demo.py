"""The demo `make run` performs once the mesh is up: ingest a sample document, ask a question.

It goes through the public REST surface (Envoy), exactly as a user would, and prints what
came back: ingestion progress, then the answer with its citations.
"""

from __future__ import annotations

import json
import pathlib

import httpx

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sample" / "solar-cooperative-handbook.md"
QUESTION = "When is the annual general meeting held, and how often are the panels cleaned?"


def _sse(lines) -> list[dict]:
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def run(base_url: str, out=print, token: str | None = None) -> dict:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=base_url, timeout=300, headers=headers) as http:
        out(f"demo: uploading {SAMPLE.name} ...")
        with http.stream(
            "POST", "/v1/documents", params={"filename": SAMPLE.name}, content=SAMPLE.read_bytes(),
            headers={"content-type": "text/markdown"},
        ) as reply:
            reply.raise_for_status()
            events = _sse(reply.iter_lines())
        for event in events:
            if "progress" in event:
                p = event["progress"]
                out(f"  {p['stage'].removeprefix('INGEST_STAGE_').lower():<12} {p.get('done', '0')}/{p.get('total', '0')}")
        final = events[-1]
        if "error" in final:
            raise RuntimeError(f"demo upload failed: {final['error']}")
        document = final["done"]["document"]
        note = " (already stored)" if final["done"].get("duplicate") else ""
        out(f"  -> {document['document_id']} {document['status']}, {document['chunk_count']} chunks{note}")
        out(f"demo: asking: {QUESTION}")
        reply = http.post("/v1/query", json={"question": QUESTION, "document_ids": [document["document_id"]]})
        reply.raise_for_status()
        answer = reply.json()["answer"]
        out(f"  answer ({answer['support_status'].removeprefix('SUPPORT_STATUS_').lower()}, "
            f"{answer['engine']['provider']}/{answer['engine']['model']}):")
        out(f"    {answer['answer']}")
        for c in answer["citations"]:
            where = " > ".join(c.get("heading_path", [])) if c.get("heading_path") else f"page {c['page']}"
            out(f"    [{c['marker']}] {c['filename']} {where} chars {c['char_start']}-{c['char_end']}: "
                f"\"{c['excerpt'][:90]}\"")
        return answer
