"""Checks every service applies to a request message before its handler runs.

proto3 enums are open: a number the enum does not define (``"style": 42`` over REST, or any gRPC
client) parses without complaint and reaches domain code as an int no branch expects. Such values
are refused here, once for every service, as INVALID_ARGUMENT with one field violation each.
Unknown JSON fields and enum *names* never reach a service (the transcoder drops or rejects them
first); the gateway refuses those (``gateway/request_validation.py``).
"""

from __future__ import annotations

from functools import cache

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from services.runtime.errors import FieldViolation, InvalidArgument

_MAX_VIOLATIONS = 10


@cache
def _holds_enums(descriptor: Descriptor) -> bool:
    """Whether a message of this type can contain an enum field at any depth (most cannot: skip their walk)."""
    seen: set[str] = set()

    def walk(d: Descriptor) -> bool:
        if d.full_name in seen:
            return False
        seen.add(d.full_name)
        for f in d.fields:
            if f.enum_type is not None:
                return True
            if f.message_type is not None and walk(f.message_type):
                return True
        return False

    return walk(descriptor)


def unknown_enum_values(message: Message, prefix: str = "") -> list[FieldViolation]:
    """One violation per enum field holding a number its enum does not define (map values and repeated included)."""
    if not _holds_enums(message.DESCRIPTOR):
        return []
    found: list[FieldViolation] = []
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        repeated = field.is_repeated
        if field.enum_type is not None:
            for item in (value if repeated else (value,)):
                if item not in field.enum_type.values_by_number:
                    names = ", ".join(v.name for v in field.enum_type.values)
                    found.append(FieldViolation(path, f"{item} is not a {field.enum_type.name}: one of {names}"))
        elif field.message_type is not None and _holds_enums(field.message_type):
            if field.message_type.GetOptions().map_entry:
                enum = field.message_type.fields_by_name["value"].enum_type
                if enum is not None:
                    found.extend(FieldViolation(f"{path}[{k!r}]", f"{v} is not a {enum.name}")
                                 for k, v in value.items() if v not in enum.values_by_number)
                items = [(f"{path}[{k!r}]", v) for k, v in value.items() if isinstance(v, Message)]
            elif repeated:
                items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
            else:
                items = [(path, value)]
            for item_path, item in items:
                found.extend(unknown_enum_values(item, f"{item_path}."))
        if len(found) >= _MAX_VIOLATIONS:
            break
    return found[:_MAX_VIOLATIONS]


def check_request(message: object) -> None:
    """Raises INVALID_ARGUMENT (reason UNKNOWN_ENUM_VALUE) for enum numbers no enum defines."""
    if not isinstance(message, Message):
        return
    violations = unknown_enum_values(message)
    if violations:
        raise InvalidArgument(
            "invalid request: " + "; ".join(f"{v.field}: {v.description}" for v in violations),
            reason="UNKNOWN_ENUM_VALUE",
            violations=violations,
        )
