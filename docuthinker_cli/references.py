"""Documents and conversations by name or by the start of their id, as people type them.

``harbor-memo.txt``, ``harbor`` (part of one name), ``3f9a`` (the start of one id) and the full id all name
the same document; a reference that names several is a usage error listing them. A reference that names
none is sent as given, so the server answers for it (a 404 for an unknown id).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docuthinker_cli.client import GatewayError
from docuthinker_cli.exit_codes import ExitCode

MIN_PREFIX = 4


def pick(reference: str, items: Sequence[dict[str, Any]], id_key: str, name_keys: Sequence[str],
         kind: str) -> dict[str, Any] | None:
    """The one item ``reference`` names (id, id prefix, exact name, part of a name), None if none does."""
    ref = reference.strip()
    low = ref.casefold()

    def names(item: dict[str, Any]) -> list[str]:
        return [str(item.get(k, "")).casefold() for k in name_keys if item.get(k)]

    tiers = [
        [i for i in items if i.get(id_key) == ref],
        [i for i in items if low in names(i)],
        [i for i in items if len(ref) >= MIN_PREFIX and str(i.get(id_key, "")).startswith(ref)],
        [i for i in items if low and any(low in n for n in names(i))],
    ]
    for found in tiers:
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            listed = "; ".join(f"{str(i.get(id_key, ''))[:12]} {i.get(name_keys[0], '')}" for i in found[:10])
            raise GatewayError(f"{ref!r} names {len(found)} {kind}s: {listed}; type more of the name or the id",
                               ExitCode.USAGE)
    return None


def document_id(reference: str, documents: Sequence[dict[str, Any]]) -> str:
    found = pick(reference, documents, "document_id", ("filename", "title"), "document")
    return str(found["document_id"]) if found else reference.strip()


def conversation_id(reference: str, conversations: Sequence[dict[str, Any]]) -> str:
    found = pick(reference, conversations, "conversation_id", ("title",), "conversation")
    return str(found["conversation_id"]) if found else reference.strip()
