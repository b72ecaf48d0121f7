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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.graph.cypher_lexer import Kind, Token, tokenize
from services.graph.query_cost import _arguments, _integer, _range_size
from services.runtime.errors import FieldViolation, InvalidArgument

DATA = 65_536
"""Bound of a stored value or a matched entity (titles, names, keys: far smaller in practice)."""
CLAUSES = frozenset({"MATCH", "OPTIONAL", "WHERE", "WITH", "UNWIND", "RETURN", "ORDER", "SKIP", "LIMIT", "CALL",
                     "UNION", "YIELD", "EXPLAIN", "PROFILE"})
_EXPRESSION_CLAUSES = frozenset({"WITH", "RETURN", "UNWIND", "WHERE", "ORDER", "SKIP", "LIMIT"})
_SPLITTERS = frozenset({"string_split", "str_split", "string_to_array", "split", "regexp_split_to_array",
                        "regexp_extract_all", "tokenize"})
_CONCATS = frozenset({"list_concat", "list_cat", "array_concat", "array_cat", "concat", "concat_ws"})
_APPENDS = frozenset({"list_append", "array_append", "array_push_back", "list_prepend", "array_prepend",
                      "array_push_front"})
_PER_ELEMENT = frozenset({"list_transform", "list_filter", "list_reduce", "all", "any", "none", "single",
                          "reduce", "filter", "extract"})
_SCALARS = frozenset({"size", "length", "count", "sum", "avg", "min", "max", "list_sum", "list_product",
                      "tointeger", "tofloat", "abs", "id", "cardinality", "octet_length", "levenshtein"})


@dataclass(frozen=True)
class Size:
    total: int
    """Items of the value, nested ones included (a string's characters)."""
    element: int
    """The largest total of one of its items (a scalar or string: its total)."""


SCALAR = Size(1, 1)
UNKNOWN = Size(DATA, DATA)


class _Unparsed(Exception):
    pass


def _refuse(description: str) -> InvalidArgument:
    return InvalidArgument(
        f"query refused: {description}", reason="QUERY_TOO_LARGE", violations=[FieldViolation("cypher", description)]
    )


def check_value_sizes(cypher: str, params: Mapping[str, Any], max_items: int, pool_items: int) -> int:
    """The largest bound of any value the query builds; refuses it past ``max_items``. ``pool_items``: what
    the engine's buffer pool holds at most (``collect`` never builds more)."""
    analysis = _Analysis(tokenize(cypher, backslash_escapes=True), params, max_items, pool_items)
    analysis.run()
    return analysis.largest


def _parameter_size(value: Any) -> Size:
    if isinstance(value, str):
        return Size(len(value), len(value))
    if isinstance(value, list | tuple):
        sizes = [_parameter_size(v) for v in value]
        return Size(len(sizes) + sum(s.total for s in sizes), max((s.total for s in sizes), default=1))
    if isinstance(value, dict):
        sizes = [_parameter_size(v) for v in value.values()]
        return Size(len(sizes) + sum(s.total for s in sizes), max((s.total for s in sizes), default=1))
    return SCALAR


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
                self._scan_calls(start, end)
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
            parser = _Parser(self, start, end)
            size = parser.expression()
            if parser.index != end:
                raise _Unparsed
        except _Unparsed:
            size = self._fallback(start, end)
        return self._check(size, start, end)

    def _check(self, size: Size, start: int, end: int) -> Size:
        self.largest = max(self.largest, size.total)
        if size.total > self.max_items:
            text = " ".join(t.text for t in self.tokens[start:end])
            text = text if len(text) <= 80 else text[:77] + "..."
            raise _refuse(f"{text!r} could build {size.total:,} items (list items and string characters); "
                          f"at most {self.max_items:,}")
        return size

    def _fallback(self, start: int, end: int) -> Size:
        """An expression the parser does not know: every bound name it mentions and every call in it, summed."""
        total = 1 + sum(self.names[t.text].total for t in self.tokens[start:end]
                        if t.kind in (Kind.WORD, Kind.QUOTED) and self.names.get(t.text, UNKNOWN) != UNKNOWN)
        total += self._scan_calls(start, end)
        return Size(total, total)

    def _scan_calls(self, start: int, end: int) -> int:
        """Bounds every function call found between ``start`` and ``end`` (inside patterns, say); their sum."""
        total = 0
        for index in range(start, end - 1):
            token, following = self.tokens[index], self.tokens[index + 1]
            previous = self.tokens[index - 1] if index else None
            if token.kind not in (Kind.WORD, Kind.QUOTED) or following.text != "(" or following.kind is not Kind.SYMBOL:
                continue
            if previous is not None and previous.kind is Kind.SYMBOL and previous.text in ".:":
                continue
            parser = _Parser(self, index, end)
            try:
                size = parser.primary()
            except _Unparsed:
                if token.text.lower() in _SPLITTERS | _CONCATS | _APPENDS | _PER_ELEMENT | {"range", "repeat", "lpad",
                                                                                             "rpad", "collect"}:
                    raise _refuse(f"{token.text}() could not be bounded here") from None
                continue
            total += self._check(size, index, parser.index).total
        return total


_BINARY = {"OR": 1, "XOR": 2, "AND": 3, "NOT": 4, "=": 5, "<>": 5, "<": 5, ">": 5, "<=": 5, ">=": 5, "=~": 5,
           "IN": 6, "STARTS": 6, "ENDS": 6, "CONTAINS": 6, "IS": 6, "+": 7, "-": 7, "||": 7, "*": 8, "/": 8, "%": 8,
           "^": 9}
_COMPARISONS = {"OR", "XOR", "AND", "=", "<>", "<", ">", "<=", ">=", "=~", "IN", "STARTS", "ENDS", "CONTAINS", "IS"}


class _Parser:
    """A Pratt parser over one expression's tokens that returns its Size instead of a tree."""

    def __init__(self, analysis: _Analysis, start: int, end: int) -> None:
        self.a = analysis
        self.tokens = analysis.tokens
        self.index = start
        self.end = end
        self.locals: dict[str, Size] = {}

    # -- tokens ---------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> Token | None:
        at = self.index + offset
        return self.tokens[at] if at < self.end else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise _Unparsed
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text.upper() != text:
            raise _Unparsed

    def at(self, text: str, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token.kind is not Kind.STRING and token.text.upper() == text

    def is_name(self, offset: int) -> bool:
        token = self.peek(offset)
        return token is not None and token.kind in (Kind.WORD, Kind.QUOTED)

    def operator(self) -> str | None:
        token = self.peek()
        if token is None or token.kind in (Kind.STRING, Kind.NUMBER, Kind.PARAMETER, Kind.QUOTED):
            return None
        text = token.text.upper()
        following = self.peek(1)
        if following is not None and following.kind is Kind.SYMBOL:
            pair = text + following.text
            if pair in ("<>", "<=", ">=", "=~", "||"):
                return pair
        return text if text in _BINARY and text != "NOT" else None

    # -- expressions ----------------------------------------------------------------------
    def expression(self, floor: int = 0) -> Size:
        """Every (sub)expression's bound is checked as it is built, so ``size(l + l)`` counts too."""
        start = self.index
        return self.a._check(self._expression(floor), start, self.index)

    def _expression(self, floor: int) -> Size:
        left = self.unary()
        while (op := self.operator()) is not None and _BINARY[op] > floor:
            self.index += 2 if op in ("<>", "<=", ">=", "=~", "||") else 1
            if op == "IS":
                if self.at("NOT"):
                    self.take()
                self.expect("NULL")
                left = SCALAR
                continue
            if op in ("STARTS", "ENDS"):
                self.expect("WITH")
            right = self.expression(_BINARY[op])
            if op in ("+", "||"):
                left = Size(left.total + right.total, max(left.element, right.element))
            elif op in _COMPARISONS:
                left = SCALAR
            else:
                left = SCALAR if left.total <= 1 and right.total <= 1 else Size(
                    max(left.total, right.total), max(left.element, right.element))
        return left

    def unary(self) -> Size:
        if self.at("NOT"):
            self.take()
            self.expression(_BINARY["NOT"])
            return SCALAR
        if self.at("-") or self.at("+"):
            self.take()
            return self.unary()
        return self.postfix(self.primary())

    def postfix(self, value: Size) -> Size:
        while True:
            if self.at("."):
                self.take()
                self.take()
                value = UNKNOWN if value in (SCALAR, UNKNOWN) else value  # a map's key: at most the map
            elif self.at("["):
                # An index (an item of it) or a slice (at most all of it); what the brackets hold is bounded
                # call by call, since the lexer reads ``1..3`` as ``1``, ``.``, ``.3``.
                start = self.index + 1
                depth, is_slice = 0, False
                while True:
                    token = self.take()
                    if token.kind is Kind.SYMBOL and token.text in "([":
                        depth += 1
                    elif token.kind is Kind.SYMBOL and token.text in ")]":
                        depth -= 1
                        if depth == 0:
                            break
                    elif depth == 1 and (token.text == "." or (token.kind is Kind.NUMBER and token.text[0] == ".")):
                        is_slice = True
                self.a._scan_calls(start, self.index - 1)
                value = value if is_slice else Size(value.element, value.element)
            elif self.at(":") and self.is_name(1):
                self.index += 2  # a label test, n:Label
                value = SCALAR
            else:
                return value

    def primary(self) -> Size:
        token = self.take()
        kind, text = token.kind, token.text
        if kind is Kind.STRING:
            return Size(max(0, len(text) - 2), max(0, len(text) - 2))
        if kind is Kind.NUMBER:
            return SCALAR
        if kind is Kind.PARAMETER:
            if text not in self.a.params:
                return SCALAR
            return _parameter_size(self.a.params[text])
        if kind is Kind.SYMBOL:
            if text == "(":
                value = self.expression()
                self.expect(")")
                return value
            if text == "[":
                return self.list_or_comprehension()
            if text == "{":
                return self.map_literal()
            if text == "*":
                return SCALAR
            raise _Unparsed
        upper = text.upper() if kind is Kind.WORD else ""
        if upper in ("TRUE", "FALSE", "NULL"):
            return SCALAR
        if upper == "CASE":
            return self.case()
        if upper in ("EXISTS", "COUNT") and self.at("{"):
            raise _Unparsed
        if self.at("("):
            return self.call(text)
        if self.at("-") and self.at(">", 1):  # a lambda, x -> body
            raise _Unparsed
        if text in self.locals:
            return self.locals[text]
        return self.a.names.get(text, UNKNOWN)

    def arguments(self) -> list[Size]:
        self.expect("(")
        if self.at("DISTINCT"):
            self.take()
        args: list[Size] = []
        if self.at(")"):
            self.take()
            return args
        while True:
            if self.is_name(0) and self.at("-", 1) and self.at(">", 2):
                name = self.take().text
                self.index += 2
                args.append(self.lambda_body(name, args[0] if args else UNKNOWN))
            elif self.at("*") and self.at(")", 1):
                self.take()
                args.append(SCALAR)
            else:
                args.append(self.expression())
            if self.at(","):
                self.take()
                continue
            self.expect(")")
            return args

    def lambda_body(self, name: str, over: Size) -> Size:
        saved = dict(self.locals)
        self.locals[name] = Size(over.element, over.element)
        body = self.expression()
        self.locals = saved
        return body

    def call(self, name: str) -> Size:
        lowered = name.lower()
        start = self.index - 1
        if lowered in ("range", "repeat", "lpad", "rpad"):
            size = self.counted(lowered)
        elif lowered in ("reduce",) and self.reduce_form():
            size = self.reduce()
        elif lowered in ("all", "any", "none", "single", "filter", "extract") and self.quantifier_form():
            size = self.quantifier(lowered)
        else:
            args = self.arguments()
            size = self.function(lowered, args)
        return self.a._check(size, start, self.index)

    def counted(self, name: str) -> Size:
        begin = self.index
        args = self.arguments()
        groups = _arguments(self.a.tokens, begin + 1)
        if name == "range":
            return Size(_range_size(groups, self.a.params), 1)
        if len(groups) < 2:
            raise _refuse(f"{name}() takes a string and a count")
        count = _integer(groups[1], self.a.params)
        if name == "repeat":
            return Size(args[0].total * max(count, 0), args[0].total * max(count, 0))
        return Size(max(count, args[0].total), max(count, args[0].total))

    def function(self, name: str, args: list[Size]) -> Size:
        if name in _SCALARS:
            return SCALAR
        if name in _SPLITTERS:
            chars = args[0].total if args else 1
            return Size(chars + 1, chars)
        if name == "collect":
            item = args[0] if args else SCALAR
            return Size(min(self.a.rows * item.total, self.a.pool_items), item.total)
        if name in _PER_ELEMENT and len(args) >= 2:
            return Size(args[0].total + (args[0].total + 1) * args[-1].total, args[-1].total)
        total = sum(a.total for a in args) + 1
        return Size(total, max((a.element for a in args), default=1))

    # -- lists and maps -------------------------------------------------------------------
    def list_or_comprehension(self) -> Size:
        if self.is_name(0) and self.at("IN", 1):
            name = self.take().text
            self.take()
            over = self.expression()
            saved = dict(self.locals)
            self.locals[name] = Size(over.element, over.element)
            if self.at("WHERE"):
                self.take()
                self.expression()
            body = Size(over.element, over.element)
            if self.at("|"):
                self.take()
                body = self.expression()
            self.locals = saved
            self.expect("]")
            return Size(over.total + over.total * body.total, body.total)
        if self.at("("):  # a pattern comprehension: as many items as matches
            raise _Unparsed
        items: list[Size] = []
        while not self.at("]"):
            items.append(self.expression())
            if self.at(","):
                self.take()
        self.take()
        return Size(len(items) + sum(i.total for i in items), max((i.total for i in items), default=1))

    def map_literal(self) -> Size:
        values: list[Size] = []
        while not self.at("}"):
            self.take()  # the key
            self.expect(":")
            values.append(self.expression())
            if self.at(","):
                self.take()
        self.take()
        return Size(len(values) + sum(v.total for v in values), max((v.total for v in values), default=1))

    def case(self) -> Size:
        branches: list[Size] = []
        if not self.at("WHEN"):
            self.expression()
        while self.at("WHEN"):
            self.take()
            self.expression()
            self.expect("THEN")
            branches.append(self.expression())
        if self.at("ELSE"):
            self.take()
            branches.append(self.expression())
        self.expect("END")
        return Size(max((b.total for b in branches), default=1), max((b.element for b in branches), default=1))

    def reduce_form(self) -> bool:
        return self.at("(") and self.at("=", 2)

    def reduce(self) -> Size:
        self.expect("(")
        accumulator = self.take().text
        self.expect("=")
        initial = self.expression()
        self.expect(",")
        name = self.take().text
        self.expect("IN")
        over = self.expression()
        self.expect("|")
        saved = dict(self.locals)
        self.locals[accumulator] = initial
        self.locals[name] = Size(over.element, over.element)
        step = self.expression()
        self.locals = saved
        self.expect(")")
        growth = max(0, step.total - initial.total)  # what one step may add to the accumulator
        return Size(initial.total + (over.total + 1) * max(growth, 1), max(initial.element, step.element))

    def quantifier_form(self) -> bool:
        return self.at("(") and self.at("IN", 2)

    def quantifier(self, name: str) -> Size:
        self.expect("(")
        variable = self.take().text
        self.expect("IN")
        over = self.expression()
        saved = dict(self.locals)
        self.locals[variable] = Size(over.element, over.element)
        body = Size(over.element, over.element)
        if self.at("WHERE"):
            self.take()
            self.expression()
        if self.at("|"):
            self.take()
            body = self.expression()
        self.locals = saved
        self.expect(")")
        if name in ("filter",):
            return over
        if name == "extract":
            return Size(over.total * (body.total + 1), body.total)
        return SCALAR
