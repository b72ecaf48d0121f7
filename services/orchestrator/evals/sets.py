"""Reading an uploaded evaluation set (CSV or JSON) into items, refusing a malformed one with its row numbers.

CSV: a header row, then one question per row. Columns (case-insensitive; only ``question`` and ``answers``
are required): ``id``, ``question``, ``answers`` (accepted answers separated by ``|``, or the single word
``unanswerable``), ``document`` (file name or document id where the answer is), ``page`` (a page or slide
number, or a sheet name), ``kind``, ``tags`` (separated by ``;`` or ``|``). Rows are numbered as a
spreadsheet shows them: the header is row 1.

JSON: a list of items, or ``{"name": ..., "items": [...]}``; an item has the same fields (``answers`` a list,
``tags`` a list, ``unanswerable: true`` instead of an empty list) and may use the docqa sets' ``file`` for
``document``, so ``../shared/data/docqa2/dev.json`` loads as it is. Items are numbered from 1.

Every malformed row is reported at once (up to ``MAX_REPORTED``), each with its number and what is wrong, so
a user fixes the file in one pass; unknown columns and keys are refused (a typo must not silently drop the
expected answers).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.orchestrator.evals.matching import Expected
from services.runtime.errors import FieldViolation, InvalidArgument, ResourceExhausted
from services.vocabulary.limits import MAX_QUESTION_CHARS

UNANSWERABLE = "unanswerable"
ANSWERABLE = "answerable"
MAX_REPORTED = 20
COLUMNS = ("id", "question", "answers", "document", "page", "kind", "tags")
_ALIASES = {"answer": "answers", "accepted_answers": "answers", "file": "document", "expected_document": "document",
            "sheet": "page", "tag": "tags"}
_IGNORED_KEYS = {"evidence", "notes", "comment", "sheet_name"}
"""Keys a JSON item may carry that are not evaluated (the docqa sets' ``evidence``)."""


@dataclass(frozen=True)
class SetLimits:
    max_items: int = 500
    max_bytes: int = 4 * 1024 * 1024
    max_question_chars: int = MAX_QUESTION_CHARS
    max_answers: int = 20
    max_answer_chars: int = 500


@dataclass(frozen=True)
class EvalItem:
    id: str
    question: str
    answers: tuple[str, ...]
    document: str = ""
    page: int = 0
    sheet: str = ""
    kind: str = ""
    tags: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.answers)

    @property
    def expected(self) -> Expected:
        return Expected(self.answers, self.document, self.page, self.sheet)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "answers": list(self.answers), "document": self.document,
                "page": self.page, "sheet": self.sheet, "kind": self.kind, "tags": list(self.tags)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> EvalItem:
        return cls(str(raw["id"]), str(raw["question"]), tuple(raw.get("answers") or ()), str(raw.get("document") or ""),
                   int(raw.get("page") or 0), str(raw.get("sheet") or ""), str(raw.get("kind") or ""),
                   tuple(raw.get("tags") or ()))


@dataclass(frozen=True)
class ParsedSet:
    items: tuple[EvalItem, ...]
    format: str
    name: str = ""
    """A name the file itself gave (JSON ``name``), used when the request names none."""


class _Problems:
    """The malformed rows found so far: a row's first problem is its reported one."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.rows: dict[int, str] = {}

    def add(self, row: int, problem: str) -> None:
        self.rows.setdefault(row, problem)

    def raise_if_any(self) -> None:
        if not self.rows:
            return
        numbers = sorted(self.rows)
        shown = numbers[:MAX_REPORTED]
        listed = "; ".join(f"{self.unit} {n}: {self.rows[n]}" for n in shown)
        more = f" (and {len(numbers) - len(shown)} more)" if len(numbers) > len(shown) else ""
        plural = "s" if len(numbers) > 1 else ""
        raise InvalidArgument(
            f"the evaluation set has {len(numbers)} malformed {self.unit}{plural}: {listed}{more}",
            reason="MALFORMED_EVAL_SET",
            metadata={"row": str(numbers[0]), "rows": ",".join(str(n) for n in shown), "unit": self.unit},
            violations=[FieldViolation(f"{self.unit} {n}", self.rows[n]) for n in shown],
        )


def _split(value: str, separators: str) -> list[str]:
    for separator in separators:
        value = value.replace(separator, "\x00")
    return [part.strip() for part in value.split("\x00") if part.strip()]


def _page(value: Any) -> tuple[int, str]:
    """A page number, or a sheet name; raises ValueError for a page below 1."""
    if value is None or value == "":
        return 0, ""
    if isinstance(value, bool):
        raise ValueError("page must be a page number or a sheet name")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        number = int(value)
        if number < 1:
            raise ValueError("page numbers start at 1")
        return number, ""
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value), ""
    if isinstance(value, str):
        return 0, value.strip()
    raise ValueError("page must be a page number or a sheet name")


def _item(fields: Mapping[str, Any], position: int, limits: SetLimits) -> EvalItem:
    """One item from its fields (already renamed to ``COLUMNS``); raises ValueError naming what is wrong."""
    question = str(fields.get("question") or "").strip()
    if not question:
        raise ValueError("question is empty")
    if len(question) > limits.max_question_chars:
        raise ValueError(f"question is longer than {limits.max_question_chars} characters")
    raw_answers = fields.get("answers")
    if isinstance(raw_answers, str):
        answers = _split(raw_answers, "|")
    elif isinstance(raw_answers, list) and all(isinstance(a, (str, int, float)) for a in raw_answers):
        answers = [str(a).strip() for a in raw_answers if str(a).strip()]
    elif raw_answers is None:
        answers = []
    else:
        raise ValueError("answers must be text (CSV: separated by |) or a list of strings")
    kind = str(fields.get("kind") or "").strip().lower()
    unanswerable = fields.get("unanswerable") is True or kind == UNANSWERABLE \
        or [a.lower() for a in answers] == [UNANSWERABLE]
    if unanswerable and answers and [a.lower() for a in answers] != [UNANSWERABLE]:
        raise ValueError("marked unanswerable but lists accepted answers")
    if unanswerable:
        answers = []
    elif not answers:
        raise ValueError("no accepted answers (write 'unanswerable' for a question the documents cannot answer)")
    if len(answers) > limits.max_answers:
        raise ValueError(f"more than {limits.max_answers} accepted answers")
    if any(len(a) > limits.max_answer_chars for a in answers):
        raise ValueError(f"an accepted answer is longer than {limits.max_answer_chars} characters")
    page, sheet = _page(fields.get("page"))
    raw_tags = fields.get("tags")
    if isinstance(raw_tags, str):
        tags = _split(raw_tags, ";|")
    elif isinstance(raw_tags, list):
        tags = [str(t).strip() for t in raw_tags if str(t).strip()]
    elif raw_tags is None:
        tags = []
    else:
        raise ValueError("tags must be text (separated by ; or |) or a list of strings")
    item_id = str(fields.get("id") or "").strip() or f"q{position}"
    return EvalItem(item_id, question, tuple(answers), str(fields.get("document") or "").strip(), page, sheet,
                    kind or (UNANSWERABLE if unanswerable else ANSWERABLE), tuple(dict.fromkeys(tags)))


def _renamed(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields under their canonical names, and the keys nobody knows."""
    fields: dict[str, Any] = {}
    unknown = []
    for key, value in raw.items():
        name = str(key).strip().lower().replace(" ", "_")
        name = _ALIASES.get(name, name)
        if name in COLUMNS or name == UNANSWERABLE:
            if name == "page" and str(key).strip().lower() == "sheet" and value not in (None, ""):
                value = str(value)  # a "sheet" column is always a sheet name
            if name not in fields or fields[name] in (None, ""):
                fields[name] = value
        elif name not in _IGNORED_KEYS:
            unknown.append(str(key))
    return fields, unknown


def _collect(rows: list[tuple[int, Mapping[str, Any]]], problems: _Problems, limits: SetLimits) -> tuple[EvalItem, ...]:
    unit = problems.unit
    items: list[EvalItem] = []
    seen: dict[str, int] = {}
    for position, (number, raw) in enumerate(rows, start=1):
        fields, unknown = _renamed(raw)
        try:
            if unknown:
                raise ValueError(f"unknown field {', '.join(map(repr, unknown))} (known: {', '.join(COLUMNS)})")
            item = _item(fields, position, limits)
        except ValueError as exc:
            problems.add(number, str(exc))
            continue
        if item.id in seen:
            problems.add(number, f"id {item.id!r} repeats {unit} {seen[item.id]}")
            continue
        seen[item.id] = number
        items.append(item)
    return tuple(items)


def _csv(text: str, limits: SetLimits) -> ParsedSet:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InvalidArgument("the evaluation set is empty", reason="EMPTY_EVAL_SET") from None
    except csv.Error as exc:
        raise _unreadable(f"row 1: {exc}") from None
    names = [h.strip() for h in header]
    missing = [c for c in ("question", "answers")
               if c not in {_ALIASES.get(n.lower().replace(" ", "_"), n.lower().replace(" ", "_")) for n in names}]
    if missing:
        raise InvalidArgument(
            f"row 1 (the header) lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            f" (columns: {', '.join(COLUMNS)})",
            reason="MALFORMED_EVAL_SET", metadata={"row": "1", "unit": "row"},
            violations=[FieldViolation("row 1", f"needs a {c} column") for c in missing])
    rows: list[tuple[int, Mapping[str, Any]]] = []
    problems = _Problems("row")
    number = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise _unreadable(f"row {number + 1}: {exc}") from None
        number += 1
        if not any(c.strip() for c in cells):
            continue  # a blank line is no question
        if len(cells) > len(names):
            problems.add(number, f"{len(cells)} cells for {len(names)} columns (quote a cell that holds a comma)")
            continue
        rows.append((number, dict(zip(names, cells))))
    _check_size(len(rows) + len(problems.rows), limits)
    items = _collect(rows, problems, limits)
    problems.raise_if_any()
    return ParsedSet(items, "csv")


def _json(text: str, limits: SetLimits) -> ParsedSet:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _unreadable(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    name = ""
    if isinstance(document, dict):
        name = str(document.get("name") or "")
        document = document.get("items")
    if not isinstance(document, list):
        raise _unreadable('JSON must be a list of items or {"name": ..., "items": [...]}')
    _check_size(len(document), limits)
    rows: list[tuple[int, Mapping[str, Any]]] = []
    problems = _Problems("item")
    for number, raw in enumerate(document, start=1):
        if isinstance(raw, dict):
            rows.append((number, raw))
        else:
            problems.add(number, "not an object")
    items = _collect(rows, problems, limits)
    problems.raise_if_any()
    return ParsedSet(items, "json", name)


def _check_size(count: int, limits: SetLimits) -> None:
    if count == 0:
        raise InvalidArgument("the evaluation set has no questions", reason="EMPTY_EVAL_SET")
    if count > limits.max_items:
        raise ResourceExhausted(f"{count} questions; a set holds at most {limits.max_items}",
                                reason="EVAL_SET_TOO_LARGE", metadata={"limit": str(limits.max_items)})


def _unreadable(why: str) -> InvalidArgument:
    return InvalidArgument(f"the evaluation set cannot be read: {why}", reason="MALFORMED_EVAL_SET")


def detect_format(data: bytes, content_type: str = "", filename: str = "", requested: str = "") -> str:
    """``csv`` or ``json``: as requested, else by content type, file name, then the first character."""
    if requested:
        if requested.lower() not in ("csv", "json"):
            raise InvalidArgument(f"unknown format {requested!r}", reason="UNKNOWN_FORMAT",
                                  violations=[FieldViolation("format", "csv or json (or empty: detected)")])
        return requested.lower()
    kind = content_type.split(";")[0].strip().lower()
    if kind in ("application/json", "text/json") or filename.lower().endswith(".json"):
        return "json"
    if kind in ("text/csv", "application/csv") or filename.lower().endswith(".csv"):
        return "csv"
    head = data.lstrip()[:1]
    return "json" if head in (b"[", b"{") else "csv"


def parse_set(data: bytes, *, content_type: str = "", filename: str = "", requested_format: str = "",
              limits: SetLimits = SetLimits()) -> ParsedSet:
    if len(data) > limits.max_bytes:
        raise ResourceExhausted(f"the set is {len(data)} bytes; at most {limits.max_bytes}",
                                reason="EVAL_SET_TOO_LARGE", metadata={"limit_bytes": str(limits.max_bytes)})
    if not data.strip():
        raise InvalidArgument("the evaluation set is empty", reason="EMPTY_EVAL_SET",
                              violations=[FieldViolation("file", "a CSV or JSON file of questions")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _unreadable(f"not UTF-8 (byte {exc.start})") from None
    fmt = detect_format(data, content_type, filename, requested_format)
    return _json(text, limits) if fmt == "json" else _csv(text, limits)
