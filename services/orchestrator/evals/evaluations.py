"""The evaluation use cases the transports call (gRPC/REST, and through them the web app, CLI and MCP)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.orchestrator.evals import compare as comparing
from services.orchestrator.evals import export as exporting
from services.orchestrator.evals.records import EvalRun, EvalSet, ItemResult, RunSettings
from services.orchestrator.evals.runner import EvalRunner
from services.orchestrator.evals.sets import SetLimits, parse_set
from services.orchestrator.evals.store import EvalStore
from services.runtime.errors import FieldViolation, InvalidArgument

MAX_NAME_CHARS = 200
DEFAULT_PAGE, MAX_PAGE = 50, 200
DEFAULT_ITEMS_PAGE, MAX_ITEMS_PAGE = 100, 1000


@dataclass(frozen=True)
class Page:
    size: int
    offset: int

    def next_token(self, total: int) -> str:
        return str(self.offset + self.size) if self.offset + self.size < total else ""


def page(size: int, token: str, default: int, most: int) -> Page:
    if size < 0:
        raise InvalidArgument("page_size must not be negative", reason="BAD_PAGE_SIZE",
                              violations=[FieldViolation("page_size", f"0 (default {default}) to {most}")])
    if token and not token.isdigit():
        raise InvalidArgument("page_token is not one this service gave", reason="BAD_PAGE_TOKEN",
                              violations=[FieldViolation("page_token", "the next_page_token of a previous page")])
    return Page(min(size or default, most), int(token or 0))


class Evaluations:
    def __init__(self, store: EvalStore, runner: EvalRunner, limits: SetLimits | None = None) -> None:
        self.store = store
        self.runner = runner
        self.limits = limits or SetLimits()

    # -- sets -------------------------------------------------------------------------------------
    def create_set(self, tenant: str, data: bytes, *, name: str = "", content_type: str = "", filename: str = "",
                   fmt: str = "") -> EvalSet:
        if len(name) > MAX_NAME_CHARS:
            raise InvalidArgument(f"name is longer than {MAX_NAME_CHARS} characters", reason="BAD_NAME",
                                  violations=[FieldViolation("name", f"at most {MAX_NAME_CHARS} characters")])
        parsed = parse_set(data, content_type=content_type, filename=filename, requested_format=fmt,
                           limits=self.limits)
        chosen = name.strip() or parsed.name.strip()[:MAX_NAME_CHARS] or filename.strip()[:MAX_NAME_CHARS] \
            or "evaluation set"
        return self.store.create_set(tenant, chosen, parsed)

    def list_sets(self, tenant: str, size: int = 0, token: str = "") -> tuple[list[EvalSet], str, int]:
        chosen = page(size, token, DEFAULT_PAGE, MAX_PAGE)
        sets, total = self.store.list_sets(tenant, chosen.size, chosen.offset)
        return sets, chosen.next_token(total), total

    def get_set(self, tenant: str, set_id: str) -> EvalSet:
        return self.store.get_set(tenant, set_id)

    def delete_set(self, tenant: str, set_id: str) -> int:
        return self.store.delete_set(tenant, set_id)

    # -- runs -------------------------------------------------------------------------------------
    def start_run(self, tenant: str, set_id: str, settings: RunSettings, label: str = "") -> EvalRun:
        return self.runner.start(tenant, set_id, settings, label)

    def get_run(self, tenant: str, run_id: str) -> tuple[EvalRun, Mapping[str, Any]]:
        self.store.sweep()
        run = self.store.get_run(tenant, run_id)
        return run, self.store.totals(tenant, run)

    def list_runs(self, tenant: str, set_id: str = "", size: int = 0,
                  token: str = "") -> tuple[list[tuple[EvalRun, Mapping[str, Any]]], str, int]:
        chosen = page(size, token, DEFAULT_PAGE, MAX_PAGE)
        self.store.sweep()
        runs, total = self.store.list_runs(tenant, set_id, chosen.size, chosen.offset)
        return [(r, self.store.totals(tenant, r)) for r in runs], chosen.next_token(total), total

    def items(self, tenant: str, run_id: str, size: int = 0, token: str = "") -> tuple[list[ItemResult], str, int]:
        chosen = page(size, token, DEFAULT_ITEMS_PAGE, MAX_ITEMS_PAGE)
        run = self.store.get_run(tenant, run_id)
        results = self.store.results(tenant, run_id, chosen.size, chosen.offset)
        return results, chosen.next_token(run.completed), run.completed

    async def cancel(self, tenant: str, run_id: str) -> tuple[EvalRun, Mapping[str, Any]]:
        run = await self.runner.cancel(tenant, run_id)
        return run, self.store.totals(tenant, run)

    def delete_run(self, tenant: str, run_id: str) -> None:
        self.store.delete_run(tenant, run_id)

    def compare(self, tenant: str, base_id: str, candidate_id: str) -> comparing.Comparison:
        violations = [FieldViolation(name, "a run id") for name, value in
                      (("base_run_id", base_id), ("candidate_run_id", candidate_id)) if not value.strip()]
        if violations:
            raise InvalidArgument("two runs are needed to compare", reason="MISSING_RUN", violations=violations)
        base, base_totals = self.get_run(tenant, base_id)
        candidate, candidate_totals = self.get_run(tenant, candidate_id)
        return comparing.compare(base, self.store.results(tenant, base.id), base_totals,
                                 candidate, self.store.results(tenant, candidate.id), candidate_totals)

    def export(self, tenant: str, run_id: str, fmt: str = "") -> tuple[bytes, str]:
        run, totals = self.get_run(tenant, run_id)
        return exporting.export(run, totals, self.store.results(tenant, run_id), fmt)
