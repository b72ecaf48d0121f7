"""Noise NER finds (numbers, sign-offs, nouns taken for people, split PDF words) and aliases within a document."""

from __future__ import annotations

import re

from services.rag.graph_sync.entity_filter import _is_split_fragment, clean_entities

TEXT = ("Jane Smith wrote the Employee Handbook for International Business Machines in 2019. The handbook says Smith "
        "reviews it yearly; IBM pays 5,000 dollars for the print run. The Infor mation desk answers questions, as "
        "the information page explains.\n\nBest Regards,\nTom")


def test_noise_goes_and_aliases_merge_into_the_full_name():
    found = [("Jane Smith", "PERSON", 2), ("Smith", "PERSON", 3), ("2019", "DATE", 1), ("5,000 dollars", "MONEY", 1),
             ("Handbook", "PERSON", 1), ("International Business Machines", "ORG", 1), ("IBM", "ORG", 2),
             ("Infor", "ORG", 1), ("Best Regards", "PERSON", 1), ("Tom", "PERSON", 1)]
    cleaned = clean_entities(found, TEXT)
    assert cleaned == [("Jane Smith", "PERSON", 5), ("International Business Machines", "ORG", 3),
                       ("Tom", "PERSON", 1)]


def test_a_surname_shared_by_two_people_stays_apart():
    found = [("Jane Smith", "PERSON", 1), ("John Smith", "PERSON", 1), ("Smith", "PERSON", 2)]
    assert sorted(clean_entities(found, "Jane Smith and John Smith met. Smith spoke.")) == sorted(found)


def test_dates_with_words_and_names_stay():
    found = [("March 2019", "DATE", 1), ("Lyon", "GPE", 1)]
    assert clean_entities(found, "In March 2019 the Lyon office opened.") == found


def _split_fragment_by_rescanning(word: str, text: str) -> bool:
    """The rule as first written (a regex over the whole lower-cased text for each follower): the reference."""
    for match in re.finditer(rf"\b{re.escape(word)} ([a-z]{{2,}})\b", text):
        if re.search(rf"\b{re.escape((word + match.group(1)).lower())}\b", text.lower()):
            return True
    return False


def test_the_split_fragment_rule_reads_the_text_once_and_decides_as_the_rescanning_rule_did():
    # A name followed by a word thousands of times (a survey's "Orrin canal") made the rule rescan the whole text
    # for every occurrence: 18 s of rag's event loop. Words are now looked up in the text's word set.
    repeated = " ".join(f"Folio {n} of the Orrin canal survey, reach {n}." for n in range(400))
    cases = [(word, TEXT) for word in ("Infor", "Smith", "Handbook", "Tom", "IBM")]
    cases += [(word, repeated) for word in ("Orrin", "Folio")]
    cases += [("Anti-", "The Anti- matter lab studies anti-matter."), ("Café", "Café au lait; caféau is no word.")]
    for word, text in cases:
        assert _is_split_fragment(word, text) == _split_fragment_by_rescanning(word, text), word
    assert _is_split_fragment("Infor", TEXT) and not _is_split_fragment("Orrin", repeated)
