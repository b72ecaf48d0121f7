"""Limits every entry point holds to alike, defined once."""

MAX_QUESTION_CHARS = 2000
"""The longest question or search query, in characters: rag's default (``DOCUTHINKER_RAG_MAX_QUESTION_CHARS``), the
orchestrator's conversations and the evaluation sets, so a question one entry point takes is never refused by the
service behind it."""
