from __future__ import annotations

from services.orchestrator.tool_planner import plan_tools, query_argument, text_argument

ALL = {"extract_entities", "python_sentiment", "analyze_document_text", "knowledge_graph_query", "vector_search",
       "rag_search"}


def test_entities_rule_uses_the_text_after_the_colon():
    [call] = plan_tools("What entities are in: Ada Lovelace met Charles Babbage in London.", "", ALL)
    assert call.tool == "extract_entities"
    assert call.input == {"text": "Ada Lovelace met Charles Babbage in London."}
    assert call.rule == "entities"


def test_document_context_wins_over_the_message():
    [call] = plan_tools("What is the sentiment?", "It was a wonderful day.", ALL)
    assert call == call.__class__("python_sentiment", {"text": "It was a wonderful day."}, "sentiment")


def test_search_strips_the_instruction():
    [call] = plan_tools("Search my documents for the refund policy?", "", ALL)
    assert call.tool == "rag_search" and call.input == {"query": "the refund policy"}
    assert query_argument("find quarterly revenue") == "quarterly revenue"


def test_several_rules_give_parallel_calls_and_similar_means_one_search():
    calls = plan_tools("Find similar passages and tell me the sentiment of: great product", "", ALL)
    assert [c.tool for c in calls] == ["python_sentiment", "vector_search"]


def test_no_rule_and_unavailable_tools():
    assert plan_tools("Write me a poem", "", ALL) == []
    assert plan_tools("list the entities of: Paris", "", {"rag_search"}) == []


def test_text_argument_fallbacks():
    assert text_argument('check "this exact quote" please', "") == "this exact quote"
    assert text_argument("plain message", "") == "plain message"
