"""The classifier with the real all-MiniLM-L6-v2 model (loaded once for the module)."""

from __future__ import annotations

import pytest

from services.models.embedder import get_embedder
from services.orchestrator.intents import INTENTS, ROUTES, IntentClassifier
from services.runtime.errors import InvalidArgument

pytestmark = pytest.mark.models  # the real embedder / local model

SEED_INTENTS = {
    "document.upload", "document.summarize", "document.keyIdeas", "document.discussionPoints", "document.sentiment",
    "document.bulletSummary", "document.rewrite", "document.recommendations", "document.categorize",
    "document.analytics", "document.translate", "chat.document", "chat.voice", "chat.general", "user.register",
    "user.login", "user.profile", "batch.multiDocument",
}


@pytest.fixture(scope="module")
def classifier():
    return IntentClassifier(get_embedder, min_confidence=0.45)


def test_catalogue_has_the_seed_intents_and_the_mesh_ones():
    assert SEED_INTENTS <= set(INTENTS)
    assert {"rag.query", "graph.query", "system.health", "system.costs"} <= set(INTENTS)
    assert set(ROUTES.values()) <= set(INTENTS)


async def test_explicit_intent_and_route_win(classifier):
    explicit = await classifier.classify(intent="document.rewrite", text="hello")
    assert (explicit.intent, explicit.confidence, explicit.source) == ("document.rewrite", 1.0, "explicit")
    routed = await classifier.classify(route="/generate-key-ideas", text="hello")
    assert (routed.intent, routed.source) == ("document.keyIdeas", "route-match")
    with pytest.raises(InvalidArgument):
        await classifier.classify(intent="document.dance")


@pytest.mark.parametrize(
    ("utterance", "expected"),
    [
        ("Can you give me a short summary of this report?", "document.summarize"),
        ("Is the tone of this customer review positive or negative?", "document.sentiment"),
        ("Please translate the text into Spanish", "document.translate"),
        ("Rewrite this paragraph so it sounds more professional", "document.rewrite"),
        ("What are the main takeaways?", "document.keyIdeas"),
        ("How much money did we spend on the LLM this month?", "system.costs"),
        ("Are all the services up and running?", "system.health"),
        ("Which of my files mention the refund policy?", "rag.query"),
    ],
)
async def test_offline_classifier_finds_the_intent(classifier, utterance, expected):
    result = await classifier.classify(text=utterance)
    assert result.intent == expected, result.reasoning
    assert result.source == "classifier"
    assert 0.45 <= result.confidence <= 1.0


async def test_unrelated_text_falls_back_to_general_chat(classifier):
    result = await classifier.classify(text="zxqv blorp 12345 qwertyuiop")
    assert (result.intent, result.confidence, result.source) == ("chat.general", 0.5, "fallback")


async def test_llm_is_asked_first_when_configured_and_bad_answers_are_ignored(classifier):
    answers = iter([{"intent": "graph.query", "confidence": 0.9, "reasoning": "asks for links"},
                    {"intent": "not.an.intent", "confidence": 1.0}])

    async def llm(snippet):
        return next(answers)

    with_llm = IntentClassifier(get_embedder, llm=llm)
    first = await with_llm.classify(text="how are these documents connected?")
    assert (first.intent, first.source, first.confidence) == ("graph.query", "llm", 0.9)
    second = await with_llm.classify(text="summarize this document")
    assert second.source == "classifier" and second.intent == "document.summarize"


async def test_general_chat_with_a_document_becomes_document_chat(classifier):
    result = await classifier.classify(text="hello there", has_document=True)
    assert result.intent == "chat.document"
