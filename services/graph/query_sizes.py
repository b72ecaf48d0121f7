"""How large a value a user query can build, bounded on its parsed expressions before it runs.

LadybugDB keeps strings and ``collect()`` in its buffer pool, but lists built inside one expression do
not live there, and one expression is not interrupted by the query timeout (measured: ``string_split(
repeat('a,', 5000000), ',')`` 418 MB; ``WITH range(1, 1000000) AS l`` then five ``WITH l + l AS l``:
1.6 GB and 53 s against a 3 s timeout). So every expression of the query is parsed (clauses, then a
Pratt parser over ``cypher_lexer`` tokens) and given an upper bound of the items it can hold, counting
list items and string characters alike, nested ones included:

- literals and parameters: their own size; a stored property or a matched node: ``DATA`` (what
  ingestion stores is small);
- list builders by their arguments, whatever their quoting or case (``range``, ``repeat``, ``lpad``/
  ``rpad``, the ``split`` family, concatenations and ``+``, appends, comprehensions, ``list_transform``
  and ``reduce`` as list size times body size, ``collect`` as rows times item, never past the buffer
  pool); their counts must be integer literals or parameters;
- names bound by ``WITH``/``UNWIND``/``AS`` carry their expression's bound into later clauses, so a chain
  of ``WITH l + l AS l`` doubles its bound as it would double the list;
- an expression this parser does not know (a pattern predicate, a subquery) is bounded by the sum of
  every bound name it mentions, counted as often as mentioned, and of every call inside it.

Any bound past ``max_items`` refuses the query with INVALID_ARGUMENT ``QUERY_TOO_LARGE`` naming the
expression. Element-wise work over many rows is left to the engine, which streams rows and stops at
the timeout.

The bounds themselves are in ``size_bounds`` and the expression parser in ``size_parser``; this module splits the
query into clauses, carries the names they bind, and bounds every expression and call it finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.graph.cypher_lexer import Kind, Token, tokenize
from services.graph.size_bounds import APPENDS, CONCATS, PER_ELEMENT, SPLITTERS, UNKNOWN, Size, Unparsed, refuse
from services.graph.size_parser import SizeParser

CLAUSES = frozenset({"MATCH", "OPTIONAL", "WHERE", "WITH", "UNWIND", "RETURN", "ORDER", "SKIP", "LIMIT", "CALL",
                     "UNION", "YIELD", "EXPLAIN", "PROFILE"})
_EXPRESSION_CLAUSES = frozenset({"WITH", "RETURN", "UNWIND", "WHERE", "ORDER", "SKIP", "LIMIT"})


def check_value_sizes(cypher: str, params: Mapping[str, Any], max_items: int, pool_items: int) -> int:
    """The largest bound of any value the query builds; refuses it past ``max_items``. ``pool_items``: what
    the engine's buffer pool holds at most (``collect`` never builds more)."""
    analysis = _Analysis(tokenize(cypher, backslash_escapes=True), params, max_items, pool_items)
    analysis.run()
    return analysis.largest


class _Analysis:
    def __init__(self, tokens: list[Token], params: Mapping[str, Any], max_items: int, pool_items: int) -> None:
        self.tokens = tokens
        self.params = params
        self.max_items = max_items
        self.pool_items = pool_items
        self.names: dict[str, Size] = {}
        self.rows = 1
        self.largest = 0

    # -- clauses ------------------------------------------------------------------------
    def run(self) -> None:
        for keyword, start, end in self._clauses():
            if keyword in _EXPRESSION_CLAUSES:
                self._projection(keyword, start, end)
            else:
                self.scan_calls(start, end)
                for token in self.tokens[start:end]:  # pattern variables: matched entities
                    if token.kind in (Kind.WORD, Kind.QUOTED) and token.text not in self.names:
                        self.names.setdefault(token.text, UNKNOWN)

    def _clauses(self) -> list[tuple[str, int, int]]:
        found: list[tuple[str, int]] = []
        depth = 0
        # Braces do not nest clauses away: a subquery's clauses (CALL { ... }, EXISTS { ... }) are analysed too.
        for index, token in enumerate(self.tokens):
            if token.kind is Kind.SYMBOL and token.text in "([":
                depth += 1
            elif token.kind is Kind.SYMBOL and token.text in ")]":
                depth = max(0, depth - 1)
            elif depth == 0 and token.kind is Kind.WORD and token.text.upper() in CLAUSES:
                previous = self.tokens[index - 1].text.upper() if index else ""
                if (token.text.upper() == "MATCH" and previous == "OPTIONAL") or (
                        token.text.upper() == "WITH" and previous in ("STARTS", "ENDS")):
                    continue
                found.append((token.text.upper(), index))
        bounds = [index for _, index in found] + [len(self.tokens)]
        return [(keyword, index + 1, bounds[n + 1]) for n, (keyword, index) in enumerate(found)]

    def _projection(self, keyword: str, start: int, end: int) -> None:
        for item_start, item_end in self._items(start, end):
            alias = None
            stop = item_end
            if stop - item_start >= 2 and self.tokens[stop - 2].kind is Kind.WORD \
                    and self.tokens[stop - 2].text.upper() == "AS":
                alias, stop = self.tokens[stop - 1].text, stop - 2
            while stop > item_start and self.tokens[stop - 1].kind is Kind.WORD \
                    and self.tokens[stop - 1].text.upper() in ("ASC", "ASCENDING", "DESC", "DESCENDING"):
                stop -= 1
            begin = item_start
            if begin < stop and self.tokens[begin].kind is Kind.WORD and self.tokens[begin].text.upper() in (
                    "DISTINCT", "BY"):
                begin += 1
            if begin < stop and self.tokens[begin].text == "*" and stop - begin == 1:
                continue
            size = self._bounded(begin, stop)
            if keyword == "UNWIND":
                if alias is not None:
                    self.names[alias] = Size(size.element, size.element)
                self.rows = min(self.rows * max(1, size.total), 10**18)
            elif alias is not None:
                self.names[alias] = size

    def _items(self, start: int, end: int) -> list[tuple[int, int]]:
        items, depth, begin = [], 0, start
        for index in range(start, end):
            token = self.tokens[index]
            if token.kind is Kind.SYMBOL and token.text in "([{":
                depth += 1
            elif token.kind is Kind.SYMBOL and token.text in ")]}":
                depth -= 1
            elif depth == 0 and token.kind is Kind.SYMBOL and token.text == ",":
                items.append((begin, index))
                begin = index + 1
        if begin < end:
            items.append((begin, end))
        return items

    def _bounded(self, start: int, end: int) -> Size:
        try:
            parser = SizeParser(self, start, end)
            size = parser.expression()
            if parser.index != end:
                raise Unparsed
        except Unparsed:
            size = self._fallback(start, end)
        return self.check(size, start, end)

    def check(self, size: Size, start: int, end: int) -> Size:
        self.largest = max(self.largest, size.total)
        if size.total > self.max_items:
            text = " ".join(t.text for t in self.tokens[start:end])
            text = text if len(text) <= 80 else text[:77] + "..."
            raise refuse(f"{text!r} could build {size.total:,} items (list items and string characters); "
                          f"at most {self.max_items:,}")
        return size

    def _fallback(self, start: int, end: int) -> Size:
        """An expression the parser does not know: every bound name it mentions and every call in it, summed."""
        total = 1 + sum(self.names[t.text].total for t in self.tokens[start:end]
                        if t.kind in (Kind.WORD, Kind.QUOTED) and self.names.get(t.text, UNKNOWN) != UNKNOWN)
        total += self.scan_calls(start, end)
        return Size(total, total)

    def scan_calls(self, start: int, end: int) -> int:
        """Bounds every function call found between ``start`` and ``end`` (inside patterns, say); their sum."""
        total = 0
        for index in range(start, end - 1):
            token, following = self.tokens[index], self.tokens[index + 1]
            previous = self.tokens[index - 1] if index else None
            if token.kind not in (Kind.WORD, Kind.QUOTED) or following.text != "(" or following.kind is not Kind.SYMBOL:
                continue
            if previous is not None and previous.kind is Kind.SYMBOL and previous.text in ".:":
                continue
            parser = SizeParser(self, index, end)
            try:
                size = parser.primary()
            except Unparsed:
                if token.text.lower() in SPLITTERS | CONCATS | APPENDS | PER_ELEMENT | {"range", "repeat", "lpad",
                                                                                             "rpad", "collect"}:
                    raise refuse(f"{token.text}() could not be bounded here") from None
                continue
            total += self.check(size, index, parser.index).total
        return total

