"""A Cypher tokenizer that knows what is code and what is not: strings, backticks, comments, parameters.

It exists for the read-only guard (``cypher_guard``), so where Cypher engines could disagree about
where a literal or comment ends it errs towards ending it early: everything after that point is
then scanned as code, and a false alarm is a refused query rather than a hidden write.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Kind(enum.Enum):
    WORD = "word"
    """An unquoted identifier or keyword."""
    QUOTED = "quoted"
    """A backtick-quoted identifier: never a keyword."""
    STRING = "string"
    NUMBER = "number"
    PARAMETER = "parameter"
    SYMBOL = "symbol"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    """For WORD/QUOTED/PARAMETER the name (backticks removed), for STRING the raw literal, else the text."""
    position: int


class LexError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at offset {position}")
        self.position = position


# Any of these ends a // comment: engines differ on which line terminators count, so all do.
_LINE_TERMINATORS = "\n\r\x0b\x0c\x85\u2028\u2029"
_WORD = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?")
_PARAMETER_NAME = re.compile(r"\w+")


def tokenize(text: str, *, backslash_escapes: bool = True) -> list[Token]:
    """Tokens of ``text``; raises LexError for an unterminated literal or comment, or a stray backslash.

    ``backslash_escapes=False`` reads strings as an engine without escape sequences would, so a
    guard can check both readings of a literal such as ``'it\\'s'``.
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            i = _line_comment_end(text, i)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise LexError("unterminated /* comment", i)
            i = end + 2
        elif ch in "'\"":
            end = _string_end(text, i, backslash_escapes)
            tokens.append(Token(Kind.STRING, text[i:end], i))
            i = end
        elif ch == "`":
            name, end = _backtick_name(text, i)
            tokens.append(Token(Kind.QUOTED, name, i))
            i = end
        elif ch == "$":
            name, end = _parameter(text, i)
            tokens.append(Token(Kind.PARAMETER, name, i))
            i = end
        elif ch == "\\":
            raise LexError("backslash outside a string literal", i)
        elif match := _NUMBER.match(text, i):
            tokens.append(Token(Kind.NUMBER, match.group(), i))
            i = match.end()
        elif match := _WORD.match(text, i):
            tokens.append(Token(Kind.WORD, match.group(), i))
            i = match.end()
        else:
            tokens.append(Token(Kind.SYMBOL, ch, i))
            i += 1
    return tokens


def _line_comment_end(text: str, start: int) -> int:
    for i in range(start + 2, len(text)):
        if text[i] in _LINE_TERMINATORS:
            return i
    return len(text)


def _string_end(text: str, start: int, backslash_escapes: bool) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and backslash_escapes:
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    raise LexError("unterminated string literal", start)


def _backtick_name(text: str, start: int) -> tuple[str, int]:
    parts: list[str] = []
    i = start + 1
    while True:
        end = text.find("`", i)
        if end < 0:
            raise LexError("unterminated `quoted name`", start)
        parts.append(text[i:end])
        if text.startswith("``", end):  # a doubled backtick is a literal backtick
            parts.append("`")
            i = end + 2
            continue
        return "".join(parts), end + 1


def _parameter(text: str, start: int) -> tuple[str, int]:
    if text.startswith("`", start + 1):
        return _backtick_name(text, start + 1)
    match = _PARAMETER_NAME.match(text, start + 1)
    if not match:
        raise LexError("'$' without a parameter name", start)
    return match.group(), match.end()
