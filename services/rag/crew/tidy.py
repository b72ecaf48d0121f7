"""Cleans an agent's raw answer: the small local model loops and stops mid-sentence.

SmolLM2-135M has no repetition penalty here and often repeats a line until ``max_tokens``,
sometimes with small edits; the repeats carry nothing, so a sentence that (nearly) repeats an
earlier one is dropped.
It also echoes the prompt's scaffolding ("Current Task: Question: ..."): those lines go too, as
does the LLM adapter's stand-in for an empty completion (``EMPTY_ANSWER``).
When the token cap cut the answer off, its trailing fragment is dropped (if complete text
precedes it).
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\s*(?:final answer|thought)\s*:\s*", re.IGNORECASE)
_ECHO = re.compile(
    r"^\W*(?:current task|question|passages from the document|main topics of the document|"
    r"this is the expected criteria|you must return|provide your complete response|"
    r"this is the context you're working with|begin!)\b",
    re.IGNORECASE,
)
EMPTY_ANSWER = "(no answer)"
"""What the crew's LLM adapter returns for an empty completion (``RouterLLM.empty_answer``)."""
_SENTENCE = re.compile(r"\s*\S.*?(?:[.!?]+(?=\s|$)|$)")
_ENDS = (".", "!", "?", ":", ")", "]", "*", "`", '"')


NEAR_DUPLICATE = 0.8
"""Word-set overlap (Jaccard) above which a sentence repeats an earlier one with small edits."""


def _words(text: str) -> frozenset[str]:
    return frozenset(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _repeats(words: frozenset[str], seen: list[frozenset[str]]) -> bool:
    return any(len(words & other) / len(words | other) >= NEAR_DUPLICATE for other in seen)


def _unique_sentences(line: str, seen: list[frozenset[str]]) -> str:
    kept = []
    for sentence in _SENTENCE.findall(line):
        words = _words(sentence)
        if words and _repeats(words, seen):
            continue
        if words:
            seen.append(words)
        kept.append(sentence)
    return "".join(kept).rstrip()


def tidy(text: str, truncated: bool = False) -> str:
    lines = [_PREFIX.sub("", line).rstrip() for line in text.strip().strip('"').splitlines()]
    seen: list[frozenset[str]] = []
    kept: list[str] = []
    for line in lines:
        if _ECHO.match(line) or line.strip() == EMPTY_ANSWER:
            continue
        if not line.strip():
            if kept and kept[-1]:
                kept.append("")
            continue
        unique = _unique_sentences(line, seen)
        if unique.strip(" -*#"):
            kept.append(unique)
    while kept and not kept[-1]:
        kept.pop()
    if truncated and kept and not kept[-1].endswith(_ENDS):
        last = kept[-1]
        cut = max(last.rfind(". "), last.rfind("! "), last.rfind("? "))
        if cut > 0:
            kept[-1] = last[: cut + 1]
        elif len(kept) > 1:
            kept.pop()
    while kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept).strip()
