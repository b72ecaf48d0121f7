"""Reading evaluation sets: CSV and JSON, every malformed row refused with its number, the limits."""

from __future__ import annotations

import json

import pytest

from services.orchestrator.evals.sets import SetLimits, parse_set
from services.runtime.errors import InvalidArgument, ResourceExhausted

GOOD_CSV = (
    "id,question,answers,document,page,kind,tags\n"
    "q1,Who keeps the lighthouse?,the keeper|keeper,harbour.pdf,2,name,staff;lighthouse\n"
    'q2,"How much, in total?",$1,073,,,money,\n'
    "q3,Who won in 1850?,unanswerable,,,,near-miss\n"
    "\n"
    "q4,Which sheet?,42,book.xlsx,Costs,number,sheet\n"
)


def test_csv_items_with_answers_documents_pages_sheets_kinds_and_tags():
    parsed = parse_set(GOOD_CSV.replace("$1,073", '"$1,073"').encode(), content_type="text/csv")
    assert parsed.format == "csv"
    one, two, three, four = parsed.items
    assert (one.id, one.answers, one.document, one.page, one.kind, one.tags) == (
        "q1", ("the keeper", "keeper"), "harbour.pdf", 2, "name", ("staff", "lighthouse"))
    assert two.question == "How much, in total?" and two.answers == ("$1,073",)
    assert three.answers == () and not three.answerable and three.kind == "unanswerable"
    assert (four.page, four.sheet) == (0, "Costs")


def test_a_malformed_csv_is_refused_with_every_bad_row_number():
    text = ("question,answers,page\n"
            "Fine?,yes,1\n"
            ",no question,\n"            # row 3
            "No answers?,,\n"           # row 4
            "Bad page?,x,0\n"           # row 5
            "Fine again?,yes,\n"
            "Too many,a,b,c\n")         # row 7
    with pytest.raises(InvalidArgument) as caught:
        parse_set(text.encode(), filename="set.csv")
    error = caught.value
    assert error.reason == "MALFORMED_EVAL_SET"
    assert error.metadata["row"] == "3" and error.metadata["rows"] == "3,4,5,7"
    assert [v.field for v in error.violations] == ["row 3", "row 4", "row 5", "row 7"]
    assert "row 4: no accepted answers" in str(error) and "4 malformed rows" in str(error)


def test_the_header_must_name_question_and_answers_and_unknown_columns_are_refused():
    with pytest.raises(InvalidArgument, match="lacks the column answers"):
        parse_set(b"question,anwsers\nWho?,me\n", filename="s.csv")
    with pytest.raises(InvalidArgument) as caught:
        parse_set(b"question,answers,colour\nWho?,me,red\n", filename="s.csv")
    assert "row 2: unknown field 'colour'" in str(caught.value)


def test_json_list_or_object_and_the_docqa_format_loads_as_it_is(shared_dir):
    parsed = parse_set(json.dumps({"name": "mine", "items": [
        {"question": "Q?", "answers": ["a"], "document": "d.pdf", "page": 3},
        {"question": "U?", "unanswerable": True, "tags": ["t"]}]}).encode())
    assert parsed.name == "mine" and parsed.format == "json"
    assert [i.id for i in parsed.items] == ["q1", "q2"] and parsed.items[1].kind == "unanswerable"
    docqa2 = parse_set((shared_dir / "data" / "docqa2" / "dev.json").read_bytes(), filename="dev.json",
                       limits=SetLimits(max_items=1000))
    assert len(docqa2.items) == 240 and docqa2.items[0].document == "20.pdf"


def test_json_items_are_numbered_from_one_and_duplicates_refused():
    body = json.dumps([{"id": "a", "question": "Q?", "answers": ["x"]}, "not an object",
                       {"id": "a", "question": "R?", "answers": ["y"]},
                       {"question": "S?", "answers": ["y"], "unanswerable": True}]).encode()
    with pytest.raises(InvalidArgument) as caught:
        parse_set(body, content_type="application/json")
    assert [v.field for v in caught.value.violations] == ["item 2", "item 3", "item 4"]
    assert "repeats item 1" in str(caught.value) and "marked unanswerable but lists" in str(caught.value)


def test_limits_empty_and_unreadable_sets():
    many = "question,answers\n" + "".join(f"Q{i}?,a\n" for i in range(6))
    with pytest.raises(ResourceExhausted, match="at most 5"):
        parse_set(many.encode(), limits=SetLimits(max_items=5))
    with pytest.raises(ResourceExhausted):
        parse_set(b"x" * 100, limits=SetLimits(max_bytes=50))
    with pytest.raises(InvalidArgument, match="empty"):
        parse_set(b"  \n")
    with pytest.raises(InvalidArgument, match="no questions"):
        parse_set(b"question,answers\n")
    with pytest.raises(InvalidArgument, match="not UTF-8"):
        parse_set("question,answers\nQué?,sí\n".encode("latin-1"))
    with pytest.raises(InvalidArgument, match="not valid JSON"):
        parse_set(b"[{]", filename="x.json")
    with pytest.raises(InvalidArgument, match="unknown format"):
        parse_set(b"question,answers\nQ?,a\n", requested_format="xml")
