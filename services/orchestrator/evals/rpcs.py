"""The evaluation RPCs of the orchestrator's servicer: protobuf to ``Evaluations`` calls and back, nothing more."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.api import httpbody_pb2

from docuthinker.orchestrator.v1 import evaluation_pb2 as epb
from services.orchestrator.evals import compare as comparing
from services.orchestrator.evals.evaluations import Evaluations
from services.orchestrator.evals.records import AGENT, ANSWER, EvalRun, EvalSet, ItemResult, RunSettings
from services.orchestrator.evals.sets import EvalItem
from services.orchestrator.wire import struct, timestamp, value
from services.runtime.request_context import current_tenant

_MODES = {ANSWER: epb.EVAL_MODE_ANSWER, AGENT: epb.EVAL_MODE_AGENT}
_MODE_NAMES = {epb.EVAL_MODE_UNSPECIFIED: ANSWER, epb.EVAL_MODE_ANSWER: ANSWER, epb.EVAL_MODE_AGENT: AGENT}
_STATES = {"running": epb.EVAL_RUN_STATE_RUNNING, "succeeded": epb.EVAL_RUN_STATE_SUCCEEDED,
           "cancelled": epb.EVAL_RUN_STATE_CANCELLED, "failed": epb.EVAL_RUN_STATE_FAILED,
           "interrupted": epb.EVAL_RUN_STATE_INTERRUPTED}
_CHANGES = {comparing.BETTER: epb.EVAL_CHANGE_BETTER, comparing.WORSE: epb.EVAL_CHANGE_WORSE,
            comparing.SAME: epb.EVAL_CHANGE_SAME, comparing.ADDED: epb.EVAL_CHANGE_ADDED,
            comparing.REMOVED: epb.EVAL_CHANGE_REMOVED}
_FIGURES = ("answer_correct", "citation_hit", "answered_rate", "correct_when_answered", "abstention_unanswerable",
            "latency_p50_s", "latency_p95_s", "latency_mean_s")


def _item(item: EvalItem) -> epb.EvalItem:
    return epb.EvalItem(id=item.id, question=item.question, answers=list(item.answers), document=item.document,
                        page=item.page, sheet=item.sheet, kind=item.kind, tags=list(item.tags))


def _set(evalset: EvalSet, with_items: bool = False) -> epb.EvalSet:
    return epb.EvalSet(set_id=evalset.id, name=evalset.name, format=evalset.format, item_count=evalset.item_count,
                       create_time=timestamp(evalset.created_at), kinds=dict(evalset.kinds),
                       items=[_item(i) for i in evalset.items] if with_items else [])


def _figures(summary: Mapping[str, Any]) -> epb.EvalFigures:
    figures = epb.EvalFigures(items=int(summary.get("items", 0)), answerable=int(summary.get("answerable", 0)),
                              unanswerable=int(summary.get("unanswerable", 0)), errors=int(summary.get("errors", 0)))
    for name in _FIGURES:
        if summary.get(name) is not None:
            setattr(figures, name, float(summary[name]))
    return figures


def _totals(totals: Mapping[str, Any]) -> epb.EvalTotals:
    return epb.EvalTotals(overall=_figures(totals.get("overall", {})),
                          per_kind={k: _figures(v) for k, v in totals.get("per_kind", {}).items()},
                          per_tag={k: _figures(v) for k, v in totals.get("per_tag", {}).items()})


def _settings(settings: RunSettings) -> epb.EvalRunSettings:
    return epb.EvalRunSettings(mode=_MODES.get(settings.mode, epb.EVAL_MODE_UNSPECIFIED), top_k=settings.top_k,
                               document_ids=list(settings.document_ids))


def _run(run: EvalRun, totals: Mapping[str, Any]) -> epb.EvalRun:
    return epb.EvalRun(run_id=run.id, set_id=run.set_id, set_name=run.set_name, label=run.label,
                       state=_STATES[run.state], total=run.total, completed=run.completed,
                       settings=_settings(run.settings), identities=struct(run.identities), totals=_totals(totals),
                       create_time=timestamp(run.created_at), finish_time=timestamp(run.finished_at),
                       error=run.error, cancel_requested=run.cancel_requested)


def _result(result: ItemResult | None) -> epb.EvalItemResult | None:
    if result is None:
        return None
    return epb.EvalItemResult(
        position=result.position, item=_item(result.item), answer=result.answer, short_answer=result.short_answer,
        support=result.support, latency_ms=round(result.seconds * 1000, 1), answered=result.answered,
        refused=result.refused, correct=result.correct, cited=result.citation_hit, error=result.error,
        engine=result.engine,
        citations=[epb.EvalCitation(filename=c.filename, document_id=c.document_id, page=c.page,
                                    sheet_name=c.sheet_name, excerpt=c.excerpt, short_answer=c.short_answer)
                   for c in result.citations])


class EvaluationRpcs:
    """Mixed into ``OrchestratorServicer``, which sets ``_evaluations``."""

    _evaluations: Evaluations

    async def CreateEvalSet(self, request: Any, context: Any) -> Any:
        created = self._evaluations.create_set(
            current_tenant(), request.file.data, name=request.name, content_type=request.file.content_type,
            filename=request.filename, fmt=request.format)
        return epb.CreateEvalSetResponse(eval_set=_set(created))

    async def ListEvalSets(self, request: Any, context: Any) -> Any:
        sets, token, total = self._evaluations.list_sets(current_tenant(), request.page_size, request.page_token)
        return epb.ListEvalSetsResponse(eval_sets=[_set(s) for s in sets], next_page_token=token, total_size=total)

    async def GetEvalSet(self, request: Any, context: Any) -> Any:
        return epb.GetEvalSetResponse(eval_set=_set(self._evaluations.get_set(current_tenant(), request.set_id), True))

    async def DeleteEvalSet(self, request: Any, context: Any) -> Any:
        runs = self._evaluations.delete_set(current_tenant(), request.set_id)
        return epb.DeleteEvalSetResponse(deleted=True, runs_deleted=runs)

    async def StartEvalRun(self, request: Any, context: Any) -> Any:
        settings = RunSettings(_MODE_NAMES.get(request.mode, str(request.mode)), request.top_k,
                               tuple(request.document_ids))
        run = self._evaluations.start_run(current_tenant(), request.set_id, settings, request.label)
        return epb.StartEvalRunResponse(run=_run(run, {}))

    async def GetEvalRun(self, request: Any, context: Any) -> Any:
        return epb.GetEvalRunResponse(run=_run(*self._evaluations.get_run(current_tenant(), request.run_id)))

    async def ListEvalRuns(self, request: Any, context: Any) -> Any:
        runs, token, total = self._evaluations.list_runs(current_tenant(), request.set_id, request.page_size,
                                                         request.page_token)
        return epb.ListEvalRunsResponse(runs=[_run(r, t) for r, t in runs], next_page_token=token, total_size=total)

    async def ListEvalRunItems(self, request: Any, context: Any) -> Any:
        results, token, total = self._evaluations.items(current_tenant(), request.run_id, request.page_size,
                                                        request.page_token)
        return epb.ListEvalRunItemsResponse(items=[_result(r) for r in results], next_page_token=token,
                                            total_size=total)

    async def CancelEvalRun(self, request: Any, context: Any) -> Any:
        return epb.CancelEvalRunResponse(run=_run(*await self._evaluations.cancel(current_tenant(), request.run_id)))

    async def DeleteEvalRun(self, request: Any, context: Any) -> Any:
        self._evaluations.delete_run(current_tenant(), request.run_id)
        return epb.DeleteEvalRunResponse(deleted=True)

    async def CompareEvalRuns(self, request: Any, context: Any) -> Any:
        c = self._evaluations.compare(current_tenant(), request.base_run_id, request.candidate_run_id)
        return epb.CompareEvalRunsResponse(
            base=_run(c.base, c.base_totals), candidate=_run(c.candidate, c.candidate_totals), deltas=dict(c.deltas),
            differences=[epb.EvalDifference(name=d.name, base=value(d.base), candidate=value(d.candidate))
                         for d in c.differences],
            items=[epb.EvalItemComparison(item_id=i.item_id, question=i.question, change=_CHANGES[i.change],
                                          base=_result(i.base), candidate=_result(i.candidate)) for i in c.items],
            better=c.counts[comparing.BETTER], worse=c.counts[comparing.WORSE], same=c.counts[comparing.SAME],
            added=c.counts[comparing.ADDED], removed=c.counts[comparing.REMOVED])

    async def ExportEvalRun(self, request: Any, context: Any) -> Any:
        data, content_type = self._evaluations.export(current_tenant(), request.run_id, request.format)
        return httpbody_pb2.HttpBody(content_type=content_type, data=data)
