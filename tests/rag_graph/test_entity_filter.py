"""Noise NER finds (numbers, sign-offs, nouns taken for people, split PDF words) and aliases within a document."""

from __future__ import annotations

from services.rag.graph_sync.entity_filter import clean_entities

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
