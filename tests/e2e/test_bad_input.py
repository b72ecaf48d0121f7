"""The REST surface fuzzed through the real gateway: schemathesis generates valid and invalid requests from the
OpenAPI document of the protos (``gateway/openapi.py``), a bounded number per operation, and every answer must be
``google.rpc.Status`` JSON when it is an error (0 plain-text errors) and no client mistake may get a 5xx.

Operations that call a language model or run an agent (seconds to minutes each on a small machine) are left out;
their request validation is the same shared code as the rest. The counts are printed and written to the mesh's
log directory (``bad_input.json``).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from gateway.openapi import document

pytestmark = pytest.mark.e2e

EXAMPLES = int(os.environ.get("DOCUTHINKER_FUZZ_EXAMPLES", "6"))
"""Examples per operation and generation mode (valid, invalid)."""
BUDGET_S = float(os.environ.get("DOCUTHINKER_FUZZ_BUDGET_S", "300"))
"""Wall-clock cap of the run: operations not reached by then are counted as skipped, not fuzzed."""
TENANT = {"x-tenant-id": "fuzz"}
SLOW = (
    "/v1/agent", "/v1/agents", "/v1/crew", "/v1/analyze", "/v1/batch", "/v1/supervisor",
    "/v1/nlp/rewrite", "/v1/nlp/translate", "/v1/nlp/discussion-points", "/v1/nlp/recommendations",
    "/v1/nlp/summary", "/v1/nlp:analyze", "/v1/query:spoken", "/v1/tools",
)


def _operations():
    schema = schemathesis.openapi.from_dict(document())
    for result in schema.get_all_operations():
        operation = result.ok()
        if not operation.path.startswith(SLOW):
            yield operation


def _probe(operation, mode: GenerationMode, check):
    """A Hypothesis test of ``EXAMPLES`` cases of one operation in one mode, each handed to ``check``."""

    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def probe(case) -> None:
        check(operation, mode, case)

    return probe


@pytest.mark.timeout(BUDGET_S + 300)  # the budget, the last operation's examples, and the mesh's start
def test_fuzzed_requests_get_status_json_errors_and_no_5xx(mesh):
    seen: Counter = Counter()
    problems: list[str] = []
    session = requests.Session()

    def check(operation, mode: GenerationMode, case) -> None:
        try:
            reply = case.call(base_url=mesh.base_url, session=session, headers=TENANT, timeout=60)
        except requests.RequestException as exc:  # the gateway cut the connection: a failure to count
            seen[f"{mode.value}:transport_error"] += 1
            problems.append(f"{operation.label} ({mode.value}): {type(exc).__name__}")
            return
        status = reply.status_code
        seen[f"{mode.value}:{status // 100}xx"] += 1
        if status < 400:
            return
        text = reply.content.decode(errors="replace")
        if not (reply.headers.get("content-type") or [""])[0].startswith("application/json"):
            seen["plain_text_errors"] += 1
            problems.append(f"{operation.label} ({mode.value}) {status} plain text: {text[:200]!r}")
            return
        if not {"code", "message"} <= set(json.loads(text)):
            seen["non_status_errors"] += 1
            problems.append(f"{operation.label} ({mode.value}) {status} not a Status: {text[:200]!r}")
        if status >= 500:
            seen["5xx"] += 1
            problems.append(f"{operation.label} ({mode.value}) {status}: {text[:300]!r}")

    started = time.monotonic()
    for operation in _operations():
        if time.monotonic() - started > BUDGET_S:
            seen["skipped_for_time"] += 1
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _probe(operation, mode, check)()
            except Unsatisfiable:  # nothing to make invalid (a GET without parameters): no negative cases
                seen["no_cases"] += 1
                continue
            seen["operations_modes"] += 1

    summary = dict(sorted(seen.items()))
    (mesh.log_dir / "bad_input.json").write_text(json.dumps({"counts": summary, "problems": problems}, indent=2))
    print("\nbad-input counts:", json.dumps(summary))
    assert seen["negative:4xx"] > 0 and seen["positive:2xx"] > 0, summary  # both kinds of request were made
    assert not problems, "\n".join(problems[:30])
