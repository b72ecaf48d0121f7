"""Read-only validation of user Cypher (QueryGraph), on tokens rather than substrings.

What is refused, with INVALID_ARGUMENT and a field violation on ``cypher``:
- any clause that writes or administers: CREATE, MERGE, DELETE, DETACH, SET, REMOVE, DROP, FOREACH,
  INSERT, ALTER, GRANT/DENY/REVOKE, SHOW, TERMINATE, RENAME, transactions (BEGIN/COMMIT/ROLLBACK,
  ``IN TRANSACTIONS``, ``USING PERIODIC COMMIT``), and file or database access (LOAD CSV, LadybugDB's
  LOAD FROM/COPY/ATTACH/INSTALL/EXPORT/IMPORT/CHECKPOINT, and USE, which would switch databases);
- ``CALL`` of any procedure outside a small read-only allow-list (so ``CALL dbms...``, ``apoc.*``);
  namespaced functions outside the temporal/spatial/vector built-ins (so ``apoc.*``, ``db.*``);
- more than one statement (a ``;`` outside strings and comments; one trailing ``;`` is dropped);
- a statement that does not start with a read clause;
- a backslash or control/format character outside string literals.

Keywords inside string literals, backtick-quoted names and comments are not code and pass:
``WHERE d.title = 'create'`` is an honest query. Strings are checked under both readings of a
backslash (escape or plain character), so an engine without escapes could not be handed a
write hidden inside what looks like a string. Defence in depth, not the only line: the stores
also run user queries in read-only transactions that are always rolled back.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from services.graph.cypher_lexer import Kind, LexError, Token, tokenize
from services.runtime.errors import FieldViolation, InvalidArgument

WRITE_OR_ADMIN_KEYWORDS = frozenset(
    """CREATE MERGE DELETE DETACH SET REMOVE DROP FOREACH INSERT ALTER GRANT DENY REVOKE SHOW TERMINATE RENAME
    LOAD COPY ATTACH INSTALL EXPORT IMPORT CHECKPOINT USE BEGIN COMMIT ROLLBACK PERIODIC APOC DBMS""".split()
)
READ_CLAUSES = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL", "EXPLAIN", "PROFILE"})
# Read-only procedures that reveal nothing beyond the caller's own database's schema.
ALLOWED_PROCEDURES = frozenset({"db.labels", "db.relationshiptypes", "db.propertykeys", "show_tables", "table_info"})
# Namespaced built-in functions that read nothing but their arguments.
ALLOWED_FUNCTION_NAMESPACES = frozenset(
    {"date", "datetime", "localdatetime", "localtime", "time", "duration", "point", "vector"}
)


@dataclass(frozen=True)
class CheckedQuery:
    """A query that passed the guard."""

    cypher: str
    """The text to run (a trailing ``;`` removed)."""
    parameters: frozenset[str]
    """Names of the parameters the query refers to."""


def _refuse(description: str, reason: str = "CYPHER_NOT_READ_ONLY") -> InvalidArgument:
    return InvalidArgument(
        f"query refused: {description}", reason=reason, violations=[FieldViolation("cypher", description)]
    )


def check_read_only(cypher: str, max_chars: int = 20_000) -> CheckedQuery:
    """The query to run, or InvalidArgument saying why it is refused."""
    if not cypher or not cypher.strip():
        raise InvalidArgument(
            "cypher is empty", reason="EMPTY_CYPHER", violations=[FieldViolation("cypher", "must not be empty")]
        )
    if len(cypher) > max_chars:
        raise _refuse(f"longer than {max_chars} characters", reason="CYPHER_TOO_LONG")
    try:
        tokens = tokenize(cypher, backslash_escapes=True)
    except LexError as exc:
        raise _refuse(str(exc), reason="CYPHER_SYNTAX") from exc
    tokens, text = _drop_trailing_semicolon(tokens, cypher)
    _check(tokens)
    try:
        plain = tokenize(cypher, backslash_escapes=False)
    except LexError:
        plain = None  # without escapes the text does not even lex: no engine reading it that way runs it
    if plain is not None:
        _check(_drop_trailing_semicolon(plain, cypher)[0])
    return CheckedQuery(text, frozenset(t.text for t in tokens if t.kind is Kind.PARAMETER))


def _drop_trailing_semicolon(tokens: list[Token], text: str) -> tuple[list[Token], str]:
    if tokens and tokens[-1].kind is Kind.SYMBOL and tokens[-1].text == ";":
        last = tokens[-1]
        return tokens[:-1], text[: last.position] + text[last.position + 1 :]
    return tokens, text


def _check(tokens: list[Token]) -> None:
    if not tokens:
        raise _refuse("no statement", reason="EMPTY_CYPHER")
    for index, token in enumerate(tokens):
        if token.kind is Kind.SYMBOL:
            _check_symbol(token)
        elif token.kind is Kind.WORD:
            word = token.text.upper()
            if word in WRITE_OR_ADMIN_KEYWORDS:
                raise _refuse(f"{word} is not allowed: queries are read-only")
            if word == "TRANSACTIONS" and index and tokens[index - 1].text.upper() in {"IN", "CONCURRENT"}:
                raise _refuse("CALL { ... } IN TRANSACTIONS is not allowed")
            if word == "CALL":
                _check_call(tokens, index)
        if _starts_namespaced_function(tokens, index):
            _check_function(tokens, index)
    first = tokens[0]
    if first.kind is not Kind.WORD or first.text.upper() not in READ_CLAUSES:
        raise _refuse(f"a query must start with a read clause ({', '.join(sorted(READ_CLAUSES))})")


def _check_symbol(token: Token) -> None:
    if token.text == ";":
        raise _refuse("multiple statements are not allowed", reason="CYPHER_MULTIPLE_STATEMENTS")
    if unicodedata.category(token.text)[0] == "C":
        raise _refuse(f"control or format character U+{ord(token.text):04X} outside a string literal")


def _dotted_name(tokens: list[Token], start: int) -> tuple[str, int]:
    """``a.b.c`` starting at ``start`` (lower-cased) and the index after it."""
    parts: list[str] = []
    i = start
    while i < len(tokens) and tokens[i].kind in (Kind.WORD, Kind.QUOTED):
        parts.append(tokens[i].text.lower())
        if i + 2 < len(tokens) and tokens[i + 1].text == "." and tokens[i + 1].kind is Kind.SYMBOL:
            i += 2
            continue
        i += 1
        break
    return ".".join(parts), i


def _check_call(tokens: list[Token], index: int) -> None:
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if following is None:
        raise _refuse("CALL without a procedure or subquery")
    if following.kind is Kind.SYMBOL and following.text in "{(":
        return  # a subquery; its body is checked with everything else
    name, _ = _dotted_name(tokens, index + 1)
    if name not in ALLOWED_PROCEDURES:
        allowed = ", ".join(sorted(ALLOWED_PROCEDURES))
        raise _refuse(f"CALL {name or following.text} is not allowed (allowed: {allowed})")


def _starts_namespaced_function(tokens: list[Token], index: int) -> bool:
    token = tokens[index]
    if token.kind not in (Kind.WORD, Kind.QUOTED):
        return False
    previous = tokens[index - 1] if index else None
    if previous is not None and (previous.text == "." or previous.text.upper() == "CALL"):
        return False  # inside a dotted name, or a procedure name (checked by _check_call)
    name, end = _dotted_name(tokens, index)
    return "." in name and end < len(tokens) and tokens[end].text == "("


def _check_function(tokens: list[Token], index: int) -> None:
    name, _ = _dotted_name(tokens, index)
    if name.split(".", 1)[0] not in ALLOWED_FUNCTION_NAMESPACES:
        raise _refuse(f"function {name}() is not allowed: only built-in read-only functions may be called")
