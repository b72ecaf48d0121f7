"""Answer typing, typed spans, table cells, sentence units and the docqa matching rule (no server)."""

from __future__ import annotations

import pytest

from bench.docqa_score import contains
from services.rag.answers.answer_types import AnswerType, classify
from services.rag.answers.question_terms import key_terms, matched_count, possessed_terms
from services.rag.answers.reader import is_fragment
from services.rag.answers.sentences import split_sentences
from services.rag.answers.tables import lookup, tables_in
from services.rag.answers.typed_spans import acronym_expansion, typed_spans


@pytest.mark.parametrize(("question", "kind"), [
    ("What fax number can I send my comments to?", AnswerType.PHONE),
    ("How many laptops were delivered?", AnswerType.NUMBER),
    ("How much did the club pay to sign him?", AnswerType.MONEY),
    ("What percentage of votes did she get?", AnswerType.PERCENT),
    ("When was the first draft written?", AnswerType.DATE),
    ("What is the case number of Knowles v. Mirzayance?", AnswerType.CODE),
    ("Who signed the memo?", AnswerType.PERSON),
    ("Which company built the bridge?", AnswerType.ORGANISATION),
    ("What city is the firm based in?", AnswerType.PLACE),
    ("Which four packages make up the model?", AnswerType.LIST),
    ("What does LRM stand for?", AnswerType.DEFINITION),
    ("Is the office open on Sundays?", AnswerType.YES_NO),
    ("Why can't you ignore them?", AnswerType.FREE),
    # The wh-word that leads decides: "where" inside a how-question does not make it a place.
    ("How do you pin down where a linear event sits on the network?", AnswerType.FREE),
    ("How many carburetors does it have?", AnswerType.NUMBER),
])
def test_answer_type_of_a_question(question, kind):
    assert classify(question) is kind


def test_typed_spans_have_exact_offsets():
    text = "Toll-free: 1-800-661-2638. Fax: (202) 493-2251. Case 07-1315 was decided on January 23, 2023."
    for kind, expected in ((AnswerType.PHONE, ["1-800-661-2638", "(202) 493-2251"]), (AnswerType.CODE, ["07-1315"]),
                           (AnswerType.DATE, ["January 23, 2023"])):
        spans = typed_spans(text, kind)
        assert [s.text for s in spans if s.text in expected] == expected
        assert all(text[s.start : s.end] == s.text for s in spans)


def test_acronym_expansion():
    text = "ABBREVIATIONS LRM Linear Reference Method NID National Identifier"
    found = acronym_expansion(text, "LRM")
    assert found is not None and found.text == "Linear Reference Method"


def test_whitespace_table_with_leader_dots_and_borrowed_label():
    text = "mpg cyl hp\nMazda RX4 ...... 21.0 6 110\nDuster 360 ..... 14.3 8 245\n"
    (table,) = tables_in(text)
    assert table.header is not None and table.header.texts() == ["mpg", "cyl", "hp"]
    answer = lookup("What is the horsepower of the Duster 360?", [(0, table, "")])
    assert answer is not None and (answer.row_label, answer.column_header, answer.cell.text) == ("Duster 360", "hp", "245")
    assert text[answer.cell.start : answer.cell.end] == "245"


def test_pipe_table_prefers_the_table_its_title_names():
    text = ("Stanley Cups\nTeam | Cups\nLeafs | 13\n\n\nStanley Cups Since 67\nTeam | Cups\nLeafs | 0\n")
    tables = [(0, t, "") for t in tables_in(text)]
    assert lookup("How many Stanley Cups have the Leafs won?", tables).cell.text == "13"


def test_lines_are_units_and_colon_sentences_continue():
    text = "Contact\nTelephone : 555-0100\nFax: 555-0101\nWrite to the office at:\n- 12 Main Street\n"
    units = [s.text for s in split_sentences(text)]
    assert "Telephone : 555-0100" in units and "Fax: 555-0101" in units
    assert "Write to the office at:\n- 12 Main Street" in units


def test_headings_captions_and_colon_fragments_are_fragments():
    assert is_fragment("This proposed AD would require the following actions:")
    assert is_fragment("Table 1: Current layout detection models")
    assert is_fragment("3.1 Overview")
    assert not is_fragment("Author: Michelle Poirier")


@pytest.mark.parametrize(("text", "gold", "ok"), [
    ("Call 1\u2011800\u2011661\u20112638 now", "1-800-661-2638", True),
    ("it was 7.3 percent", "3", False),
    ("13.0 cups", "13", False),
    ("the 737 MAX", "73", False),
    ("1,073 items", "73", False),
    ("won 13 cups", "13", True),
    ("A link\nexample", "a link example", True),
])
def test_docqa_matching_rule(text, gold, ok):
    assert contains(text, gold) is ok


# -- attributes: a typed value must be labelled by what the question asks about -------------------
from services.rag.answers import lexical  # noqa: E402
from services.rag.answers.attributes import attribute_of, label_strength  # noqa: E402
from services.rag.answers.typed_spans import acronyms_in  # noqa: E402


def _strength(question: str, kind: AnswerType, text: str, value: str) -> int:
    attribute = attribute_of(question, kind)
    assert attribute is not None
    start = text.index(value)
    return label_strength(attribute, text, start, start + len(value))


def test_a_counted_noun_after_the_number_labels_it():
    text = "The API runs layout detection with only four lines of code. It scored just four goals that season."
    question = "How many lines of code does it take?"
    assert _strength(question, AnswerType.NUMBER, text, "four") == 2
    assert _strength(question, AnswerType.NUMBER, text[text.index("It scored"):], "four") == 0


def test_a_form_label_on_the_line_below_labels_the_value():
    text = ("Commission file number: 000-30653\n\nNevada | 20-8143439\n"
            "(State of incorporation) | (IRS Employer Identification No.)\n")
    question = "What is the company's IRS Employer Identification Number?"
    assert _strength(question, AnswerType.CODE, text, "20-8143439") == 1
    assert _strength(question, AnswerType.CODE, text, "000-30653") == 0


def test_a_value_in_prose_is_not_labelled_by_a_word_two_lines_away():
    text = ("it was my final game in a Norwich shirt, which was a sad occasion for everyone at the club\n"
            "Roberts had scored just four goals heading into the end of the season and the fans knew it\n")
    assert _strength("What shirt number did Roberts wear?", AnswerType.NUMBER, text, "four") == 0


def test_toll_free_numbers_are_known_by_their_prefix():
    text = "Téléphone : +01-819-564-4857\n1-800-661-2638 (Canada et États-Unis)\n"
    question = "What is the toll-free phone number?"
    assert _strength(question, AnswerType.PHONE, text, "1-800-661-2638") == 2
    assert _strength(question, AnswerType.PHONE, text, "+01-819-564-4857") == 1


def test_questions_without_an_attribute_have_none():
    assert attribute_of("When was the draft written?", AnswerType.DATE) is None
    assert attribute_of("How many?", AnswerType.NUMBER) is None


def test_accents_and_camel_case_fold_into_the_same_terms():
    assert lexical.content_terms("GéoGratis") == lexical.content_terms("GeoGratis")
    assert {"spearman", "correl"} <= lexical.content_terms("SpearmanCorrelationCoefficient")


def test_the_acronym_asked_about_is_the_one_to_expand():
    assert acronyms_in("What does ICT stand for in the DPR paper?") == ["ICT"]
    assert acronyms_in("What do LRM and LRS mean?") == ["LRM", "LRS"]


def test_a_row_is_found_by_its_index():
    text = "| Sepal.Length | Sepal.Width | Species\n148 | 6.5 | 3.0 | virginica\n149 | 6.2 | 3.4 | virginica\n"
    tables = [(0, t, "") for t in tables_in(text)]
    answer = lookup("What is the sepal width of row 149?", tables)
    assert answer is not None and (answer.row_label, answer.column_header, answer.cell.text) == ("149", "Sepal.Width", "3.4")


def test_a_table_of_contents_answers_which_page():
    text = ("Item 1. | Business | 4\nItem 1A. | Risk Factors | 9\n"
            "Item 7A. | Quantitative and Qualitative Disclosures about Market Risk | 14\n")
    tables = [(0, t, "") for t in tables_in(text)]
    answer = lookup("On which page does Item 7A, Quantitative and Qualitative Disclosures about Market Risk, start?",
                    tables)
    assert answer is not None and answer.cell.text == "14"


def test_a_chunk_of_one_long_row_is_a_row_not_a_header():
    (table,) = tables_in("1Freq Granulocytes | -0.29 | 0.11 | 0.037 | 1\n")
    assert table.header is None and len(table.rows) == 1


@pytest.mark.parametrize(("text", "sentences"), [
    ("6480 Cameron Street Ste. 305 – Las Vegas, NV 89118", 1),
    ("See Fig. 3 and Vol. 2, pp. 33-35. Then No. 5 applies.", 2),
    ("Ask Dr. Smith. It weighs approx. 5 kg. It is big.", 3),
    ("Acme Inc. was founded in 1990. It grew.", 2),
])
def test_abbreviations_do_not_end_sentences(text, sentences):
    assert [s.text for s in split_sentences(text)][:1] != ["6480 Cameron Street Ste."]
    assert len(split_sentences(text)) == sentences


def test_idioms_are_not_key_terms_and_possessives_name_what_is_asked():
    assert key_terms("Who came up with Markdown in the first place?", AnswerType.PERSON)[1] == frozenset()
    assert "place" not in key_terms("In what year does the opening scene take place?", AnswerType.DATE)[1]
    assert possessed_terms("What is the name of Prince Vasili's daughter?") == lexical.content_terms("daughter")
    assert possessed_terms("What's the secret to new ideas?") == frozenset()


def test_a_four_digit_year_matches_its_two_digit_form():
    assert matched_count(frozenset({"1967"}), lexical.content_terms("Stanley Cups Since 67")) == 1
    assert matched_count(frozenset({"1967"}), lexical.content_terms("Stanley Cups 13")) == 0
