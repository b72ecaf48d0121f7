"""Bounds on what a user query can make the engine build before the engine's own limits apply.

LadybugDB keeps query memory (hash tables, collected lists, strings) in its buffer pool and stops
morsel-driven work at the query timeout, so most runaway queries fail alone. Lists made by
``range()`` escape both: ``UNWIND range(1, 1e9)`` was measured growing the process by about
11 bytes an item with the timeout checked only after the list existed (1e8 items: 1.1 GB and 17 s
against a 2 s timeout; 1e9 items killed the host). So ``range()`` is bounded here, before the
query runs, for every backend: its bounds must be integer literals or parameters, and the
product of the sizes of all ranges in a query (nested ranges multiply) may not pass a limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.graph.cypher_lexer import Kind, Token, tokenize
from services.runtime.errors import FieldViolation, InvalidArgument

GENERATORS = frozenset({"range"})


def _refuse(description: str) -> InvalidArgument:
    return InvalidArgument(
        f"query refused: {description}", reason="QUERY_TOO_LARGE", violations=[FieldViolation("cypher", description)]
    )


def check_generated_items(cypher: str, params: Mapping[str, Any], max_items: int) -> int:
    """The number of items the query's ``range()`` calls generate at most; refuses it past ``max_items``."""
    tokens = tokenize(cypher, backslash_escapes=True)
    total = 1
    calls = 0
    for index in range(len(tokens)):
        if not _is_generator_call(tokens, index):
            continue
        calls += 1
        size = _range_size(_arguments(tokens, index + 2), params)
        total *= max(size, 1)
        if total > max_items:
            raise _refuse(
                f"range() would generate {total:,} items (ranges multiply when nested); at most {max_items:,}"
            )
    return total if calls else 0


def _is_generator_call(tokens: list[Token], index: int) -> bool:
    token = tokens[index]
    if token.kind not in (Kind.WORD, Kind.QUOTED) or token.text.lower() not in GENERATORS:
        return False
    previous = tokens[index - 1] if index else None
    if previous is not None and previous.kind is Kind.SYMBOL and previous.text == ".":
        return False  # a property or namespaced name, such as n.range
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return following is not None and following.kind is Kind.SYMBOL and following.text == "("


def _arguments(tokens: list[Token], start: int) -> list[list[Token]]:
    """The comma-separated argument token lists of the call whose ``(`` precedes ``start``."""
    args: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[start:]:
        if token.kind is Kind.SYMBOL and token.text in "([{":
            depth += 1
        elif token.kind is Kind.SYMBOL and token.text in ")]}":
            if depth == 0:
                return args if args[0] else []
            depth -= 1
        elif token.kind is Kind.SYMBOL and token.text == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(token)
    raise _refuse("range( is not closed")


def _integer(arg: list[Token], params: Mapping[str, Any]) -> int:
    sign = 1
    if len(arg) == 2 and arg[0].kind is Kind.SYMBOL and arg[0].text in "+-":
        sign = -1 if arg[0].text == "-" else 1
        arg = arg[1:]
    if len(arg) == 1 and arg[0].kind is Kind.NUMBER:
        return sign * _number(arg[0].text)
    if len(arg) == 1 and arg[0].kind is Kind.PARAMETER:
        value = params.get(arg[0].text)
        if isinstance(value, bool) or not isinstance(value, int | float) or float(value) != int(value):
            raise _refuse(f"range() bound ${arg[0].text} must be an integer parameter")
        return sign * int(value)
    text = " ".join(t.text for t in arg) or "nothing"
    raise _refuse(f"range() bounds must be integer literals or parameters, not {text!r}")


def _number(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        value = float(text)
        if not value.is_integer():
            raise _refuse(f"range() bound {text} is not an integer") from None
        return int(value)


def _range_size(args: list[list[Token]], params: Mapping[str, Any]) -> int:
    if len(args) not in (2, 3):
        raise _refuse("range() takes a start, an end and an optional step")
    start, end = _integer(args[0], params), _integer(args[1], params)
    step = _integer(args[2], params) if len(args) == 3 else 1
    if step == 0:
        raise _refuse("range() step must not be 0")
    return max(0, (end - start) // step + 1)
