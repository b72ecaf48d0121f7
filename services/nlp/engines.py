"""Which engine produced a result: every NLP response names it honestly."""

from __future__ import annotations

from importlib import metadata

from services.clients.results import Engine


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


TEXT_STATS = Engine("local", "docuthinker-text-stats")
VADER = Engine("vader", f"vaderSentiment-{_version('vaderSentiment')}")
EXTRACTIVE = Engine("local", "all-MiniLM-L6-v2-extractive")
KEYPHRASES = Engine("local", "all-MiniLM-L6-v2-keyphrases")
GROUNDED_TEMPLATE = Engine("local", "grounded-template")
"""Deterministic construction from the document's key ideas, used when no LLM output is usable."""
