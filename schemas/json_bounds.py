"""The bounds a record's parsed JSON must keep, checked by one iterative walk. Pure.

What the pipeline accepts it must be able to encode again and show in an
error, so nesting, integers and the number of values are bounded below what
orjson would parse. :func:`check_json_bounds` walks the value once with an
explicit stack, never recursion, so a hostile value cannot exhaust the
interpreter's stack while it is checked. Where each bound comes from:
``schemas/README.md``, "JSON bounds". The codec's one pass checks the same
bounds on the way instead (:mod:`schemas.one_pass`); this walk is for the
records it leaves to the long way, and says where a bound is broken.

Example: ``check_json_bounds({"a": [1, 2.5, "x"]})`` -> 5 (the object, the
array and its three items); ``{"a": 2**63}`` -> ``DecodeError`` naming ``a``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from schemas.errors import DecodeError
from schemas.log_text import shown

#: Kafka's default ``max.message.bytes`` is 1 MiB plus a little; a record
#: beyond this could not have been produced, and one this large is a bug.
MAX_RECORD_BYTES: Final = 1_000_000
#: Containers (objects and arrays) inside one another, the record itself
#: being level 1. ADK's own shapes use about ten levels (envelope, event,
#: content, parts, part, functionCall, args, ...); 64 leaves free-form values
#: (call arguments, state) room and stays far below orjson's 1,024 and the
#: ~254 levels at which orjson.dumps and pydantic serialization give up, so
#: every accepted record can be encoded again.
MAX_DEPTH: Final = 64
#: JSON values (containers and scalars; object keys not counted) in one
#: record. The densest ordinary records spend 13-18 bytes per value (9,000
#: function calls in 0.85 MB; a state delta of 40,000 keys in 0.67 MB); one
#: value per 8 bytes of the size limit admits those at full size with room to
#: spare and refuses records made of bare punctuation (2-3 bytes per value).
MAX_NODES: Final = MAX_RECORD_BYTES // 8
#: Items of one array or members of one object: half of :data:`MAX_NODES`,
#: so a full-size state delta or tool result fits, one array of tiny items
#: filling the record does not.
MAX_ITEMS: Final = MAX_NODES // 2
#: Signed 64-bit integers: what orjson, Kafka clients and SQL ``bigint`` hold.
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

# A path in a reason keeps its first and last parts; each part is cut too.
_PATH_HEAD: Final = 4
_PATH_TAIL: Final = 2
_PATH_PART_CHARS: Final = 40

# Where a container sits: its key and its parent's path, linked (O(1) per
# container), turned into a list only when a reason names it.
_Path = tuple[str | int, "_Path"] | None


def shown_path(keys: Sequence[str | int]) -> str:
    """Where a value sits in a record, as one bounded, escaped line.

    Keys come from the input (field names, state keys), so each is escaped
    and cut; a deep path keeps its first and last keys.

    Example: ``("event", "content", "parts", 3)`` -> ``event.content.parts.3``;
    ``()`` -> ``<record>``.
    """
    parts = [shown(str(key), _PATH_PART_CHARS) for key in keys]
    if len(parts) > _PATH_HEAD + _PATH_TAIL:
        parts = [*parts[:_PATH_HEAD], f"...({len(parts)} levels)...", *parts[-_PATH_TAIL:]]
    return ".".join(parts) or "<record>"


def _where(path: _Path) -> str:
    keys: list[str | int] = []
    while path is not None:
        key, path = path
        keys.append(key)
    return shown_path(keys[::-1])


def _scalar_problem(value: object) -> str | None:
    # bool is an int subclass, and never out of range.
    if isinstance(value, int) and not isinstance(value, bool):
        if INT64_MIN <= value <= INT64_MAX:
            return None
        return "integer outside the signed 64-bit range"
    if isinstance(value, float) and not math.isfinite(value):
        return "number is not finite"
    return None


def check_json_bounds(value: object) -> int:
    """The number of JSON values in `value`, once it keeps every bound.

    `value` is what ``orjson.loads`` returns: dicts, lists, strings, numbers,
    booleans and ``None`` (exactly these types; subclasses are not walked
    into). Object keys are not counted; their size is bounded by the
    record's.

    Raises:
        DecodeError: deeper than :data:`MAX_DEPTH`, more than
            :data:`MAX_NODES` values or :data:`MAX_ITEMS` items in one
            container, an integer outside 64 bits, or a non-finite float.
            The reason names where (``event.content.parts.3``).
    """
    nodes = 1
    if not isinstance(value, dict | list):
        if (problem := _scalar_problem(value)) is not None:
            raise DecodeError(f"<record>: {problem}")
        return nodes
    # Only containers are stacked, each with its depth and path; scalars are
    # checked where their container is read, so no node is visited twice.
    stack: list[tuple[dict[str, object] | list[object], int, _Path]] = [(value, 1, None)]
    while stack:
        container, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise DecodeError(f"{_where(path)}: nested deeper than {MAX_DEPTH} levels")
        if len(container) > MAX_ITEMS:
            raise DecodeError(
                f"{_where(path)}: {len(container)} items in one container, at most {MAX_ITEMS}"
            )
        nodes += len(container)
        if nodes > MAX_NODES:
            raise DecodeError(f"more than {MAX_NODES} JSON values in one record")
        items: Iterable[tuple[str | int, object]] = (
            container.items() if isinstance(container, dict) else enumerate(container)
        )
        for key, item in items:
            # Exact types: orjson makes no subclasses, and text (the commonest
            # value) is then passed over without a call.
            kind = type(item)
            if kind is dict or kind is list:
                stack.append((item, depth + 1, (key, path)))  # type: ignore[arg-type]  # dict or list
            elif kind is not str and (problem := _scalar_problem(item)) is not None:
                # The path is built only for a value that fails.
                raise DecodeError(f"{_where((key, path))}: {problem}")
    return nodes
