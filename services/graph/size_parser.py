"""A Pratt parser over one expression's ``cypher_lexer`` tokens that returns the bound of the value it builds
(a ``Size``) instead of a tree; the bounds each construct gets are listed in ``query_sizes``.

Separate from the clause analysis (``query_sizes``), which splits the query into clauses and expressions and keeps
the names they bind: this module knows only expressions, and reaches that analysis through ``Scope``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from services.graph.cypher_lexer import Kind, Token
from services.graph.query_cost import _arguments, _integer, _range_size
from services.graph.size_bounds import (
    PER_ELEMENT,
    SCALAR,
    SCALARS,
    SPLITTERS,
    UNKNOWN,
    Size,
    Unparsed,
    parameter_size,
    refuse,
)


class Scope(Protocol):
    """What an expression sees of its query (``query_sizes``): the tokens, the parameters, the names bound by
    earlier clauses, the rows so far; and the checks every (sub)expression's bound goes through."""

    tokens: list[Token]
    params: Mapping[str, Any]
    names: dict[str, Size]
    rows: int
    pool_items: int

    def check(self, size: Size, start: int, end: int) -> Size: ...

    def scan_calls(self, start: int, end: int) -> int: ...


_BINARY = {"OR": 1, "XOR": 2, "AND": 3, "NOT": 4, "=": 5, "<>": 5, "<": 5, ">": 5, "<=": 5, ">=": 5, "=~": 5,
           "IN": 6, "STARTS": 6, "ENDS": 6, "CONTAINS": 6, "IS": 6, "+": 7, "-": 7, "||": 7, "*": 8, "/": 8, "%": 8,
           "^": 9}
_COMPARISONS = {"OR", "XOR", "AND", "=", "<>", "<", ">", "<=", ">=", "=~", "IN", "STARTS", "ENDS", "CONTAINS", "IS"}


class SizeParser:
    """A Pratt parser over one expression's tokens that returns its Size instead of a tree."""

    def __init__(self, analysis: Scope, start: int, end: int) -> None:
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
            raise Unparsed
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.text.upper() != text:
            raise Unparsed

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
        return self.a.check(self._expression(floor), start, self.index)

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
                self.a.scan_calls(start, self.index - 1)
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
            return parameter_size(self.a.params[text])
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
            raise Unparsed
        upper = text.upper() if kind is Kind.WORD else ""
        if upper in ("TRUE", "FALSE", "NULL"):
            return SCALAR
        if upper == "CASE":
            return self.case()
        if upper in ("EXISTS", "COUNT") and self.at("{"):
            raise Unparsed
        if self.at("("):
            return self.call(text)
        if self.at("-") and self.at(">", 1):  # a lambda, x -> body
            raise Unparsed
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
        return self.a.check(size, start, self.index)

    def counted(self, name: str) -> Size:
        begin = self.index
        args = self.arguments()
        groups = _arguments(self.a.tokens, begin + 1)
        if name == "range":
            return Size(_range_size(groups, self.a.params), 1)
        if len(groups) < 2:
            raise refuse(f"{name}() takes a string and a count")
        count = _integer(groups[1], self.a.params)
        if name == "repeat":
            return Size(args[0].total * max(count, 0), args[0].total * max(count, 0))
        return Size(max(count, args[0].total), max(count, args[0].total))

    def function(self, name: str, args: list[Size]) -> Size:
        if name in SCALARS:
            return SCALAR
        if name in SPLITTERS:
            chars = args[0].total if args else 1
            return Size(chars + 1, chars)
        if name == "collect":
            item = args[0] if args else SCALAR
            return Size(min(self.a.rows * item.total, self.a.pool_items), item.total)
        if name in PER_ELEMENT and len(args) >= 2:
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
            raise Unparsed
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
