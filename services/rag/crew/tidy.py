"""Cleans an agent's raw answer: the small local model loops and stops mid-sentence.

SmolLM2-135M has no repetition penalty here and often repeats a line until ``max_tokens``;
the repeats carry nothing, so each distinct line (and sentence within a line) is kept once.
When the token cap cut the answer off, its trailing fragment is dropped (if complete text
precedes it).
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\s*(?:final answer|thought)\s*:\s*", re.IGNORECASE)
_SENTENCE = re.compile(r"\s*\S.*?(?:[.!?]+(?=\s|$)|$)")
_ENDS = (".", "!", "?", ":", ")", "]", "*", "`", '"')


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _unique_sentences(line: str, seen: set[str]) -> str:
    kept = []
    for sentence in _SENTENCE.findall(line):
        key = _key(sentence)
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(sentence)
    return "".join(kept).rstrip()


def tidy(text: str, truncated: bool = False) -> str:
    lines = [_PREFIX.sub("", line).rstrip() for line in text.strip().splitlines()]
    seen: set[str] = set()
    kept: list[str] = []
    for line in lines:
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
