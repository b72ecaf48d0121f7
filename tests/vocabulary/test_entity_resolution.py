"""Canonical keys: repeated mentions of one entity or topic resolve to one node."""

from __future__ import annotations

import pytest

from services.vocabulary.entity_resolution import display_name, entity_key, topic_key


@pytest.mark.parametrize(
    "spellings, key",
    [
        (["Apple Inc.", "apple, inc", "APPLE", "Apple's", "Apple\u2019s", "The Apple Corporation", " apple "], "apple"),
        (["Acme Co., Ltd.", "ACME Corp", "Acme LLC", "acme"], "acme"),
        (["U.S. Steel", "US Steel", "u.s. steel"], "us steel"),
        (["AT&T", "AT & T", "at and t"], "at and t"),
        (["Nestl\u00e9 S.A.", "Nestle SA", "NESTLE"], "nestle"),
        (["Coca-Cola", "Coca Cola", "coca\u2014cola"], "coca cola"),
        (["New   York", "new york", "New\tYork"], "new york"),
    ],
)
def test_spellings_of_one_entity_share_a_key(spellings, key):
    assert {entity_key(s) for s in spellings} == {key}


def test_distinct_entities_stay_distinct():
    keys = [entity_key(s) for s in ("Apple", "Applied Materials", "Python 3.11", "Python 3.12", "Jones", "Jone")]
    assert len(set(keys)) == len(keys)
    assert entity_key("Python 3.11") == "python 3.11"  # a decimal point is not punctuation


def test_a_lone_suffix_word_is_kept():
    assert entity_key("Company") == "company"
    assert entity_key("The") == "the"


def test_topics_keep_suffix_words_but_fold_case_and_punctuation():
    assert topic_key("Machine-Learning") == topic_key("machine learning") == "machine learning"
    assert topic_key("Graph Databases, Inc.") == "graph databases inc"


def test_nothing_but_punctuation_has_no_key():
    assert entity_key("...") == topic_key("--- ") == ""


def test_display_name_collapses_whitespace_only():
    assert display_name("  Apple \n Inc. ") == "Apple Inc."
