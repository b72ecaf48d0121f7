"""The bound of a value a query can build (``Size``), and what the size checks share: the bound of a stored value,
of a parameter, the families of functions by what they build, and the refusal.

Separate from the clause analysis (``query_sizes``) and the expression parser (``size_parser``) because both use
it and neither should own it: it is the vocabulary of the bounds, with no parsing in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.runtime.errors import FieldViolation, InvalidArgument

DATA = 65_536
"""Bound of a stored value or a matched entity (titles, names, keys: far smaller in practice)."""
SPLITTERS = frozenset({"string_split", "str_split", "string_to_array", "split", "regexp_split_to_array",
                        "regexp_extract_all", "tokenize"})
CONCATS = frozenset({"list_concat", "list_cat", "array_concat", "array_cat", "concat", "concat_ws"})
APPENDS = frozenset({"list_append", "array_append", "array_push_back", "list_prepend", "array_prepend",
                      "array_push_front"})
PER_ELEMENT = frozenset({"list_transform", "list_filter", "list_reduce", "all", "any", "none", "single",
                          "reduce", "filter", "extract"})
SCALARS = frozenset({"size", "length", "count", "sum", "avg", "min", "max", "list_sum", "list_product",
                      "tointeger", "tofloat", "abs", "id", "cardinality", "octet_length", "levenshtein"})


@dataclass(frozen=True)
class Size:
    total: int
    """Items of the value, nested ones included (a string's characters)."""
    element: int
    """The largest total of one of its items (a scalar or string: its total)."""


SCALAR = Size(1, 1)
UNKNOWN = Size(DATA, DATA)


class Unparsed(Exception):
    pass


def refuse(description: str) -> InvalidArgument:
    return InvalidArgument(
        f"query refused: {description}", reason="QUERY_TOO_LARGE", violations=[FieldViolation("cypher", description)]
    )



def parameter_size(value: Any) -> Size:
    if isinstance(value, str):
        return Size(len(value), len(value))
    if isinstance(value, list | tuple):
        sizes = [parameter_size(v) for v in value]
        return Size(len(sizes) + sum(s.total for s in sizes), max((s.total for s in sizes), default=1))
    if isinstance(value, dict):
        sizes = [parameter_size(v) for v in value.values()]
        return Size(len(sizes) + sum(s.total for s in sizes), max((s.total for s in sizes), default=1))
    return SCALAR
