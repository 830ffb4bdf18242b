"""Forks: a new session whose history is another's up to an offset, diverging after. Pure.

A fork is one record, the new session's first: a bookkeeping event of the
pipeline (author ``ctxstream``, no content) whose custom metadata names the
source session and an offset on its partition::

    {"author": "ctxstream", "customMetadata": {"ctxstream":
        {"fork_of": {"session_key": "acme/app/u1/s1", "offset": 41, "first_offset": 12}}}}

Nothing is copied: the fork inherits the source's records up to that offset,
read back when it is folded, at negative offsets (:func:`inherited`) before the
fork record, from a projection whose ``last_offset`` is :data:`INHERITING`.
``first_offset``, a fork of a fork, and how a window names inherited records:
projections/README.md, "Forks".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from projections.compaction.summary_request import pipeline_event
from projections.event_kinds import METADATA_NAMESPACE
from projections.fold.rebuild import current_incarnation
from schemas.envelope import Envelope
from schemas.errors import InvalidSessionKeyError, TenantMismatchError
from schemas.event import Event
from schemas.json_bounds import INT64_MAX, INT64_MIN
from schemas.keys import Offset, SessionKey, check_tenant_owns_session, validate_session_key
from schemas.logged_event import LoggedEvent

#: The key of a fork's source under the pipeline's custom-metadata namespace.
FORK_KEY: Final = "fork_of"
_REQUIRED: Final = frozenset({"session_key", "offset"})
_OPTIONAL: Final = frozenset({"first_offset"})
#: ``last_offset`` of a projection about to fold a fork's inherited records.
INHERITING: Final = Offset(INT64_MIN)


class ForkError(ValueError):
    """A fork record that cannot be folded: what is wrong with it."""


@dataclass(frozen=True, slots=True)
class ForkSource:
    """The session a fork starts from and the last offset of it the fork keeps.

    `first_offset`: where the source's history starts on its partition, when
    the fork record says (None: an older record, or not known).
    """

    session_key: SessionKey
    offset: Offset
    first_offset: Offset | None = None


def fork_source(envelope: Envelope) -> ForkSource | None:
    """The source `envelope`'s event forks from, None when it is no fork record.

    Example: the event above on session ``acme/app/u1/s2`` ->
    ``ForkSource("acme/app/u1/s1", 41, 12)``.

    Raises:
        ForkError: The record names a fork but not a valid one: a source that
            is not a session key of the same tenant, the session itself, or
            an offset that is not a Kafka offset, or a ``first_offset`` that
            is not one or lies past ``offset``.
    """
    event = envelope.event
    if event.content is not None or event.actions.compaction is not None:
        return None
    metadata = event.custom_metadata
    if not metadata:
        return None
    ours = metadata.get(METADATA_NAMESPACE)
    if not isinstance(ours, dict) or FORK_KEY not in ours:
        return None
    return _source(envelope, ours[FORK_KEY])


def _source(envelope: Envelope, named: Any) -> ForkSource:
    if not isinstance(named, Mapping) or not _REQUIRED <= set(named) <= _REQUIRED | _OPTIONAL:
        raise ForkError(
            f"{FORK_KEY} must be an object of session_key and offset (and optionally first_offset)"
        )
    raw_key, offset = named["session_key"], named["offset"]
    if not isinstance(raw_key, str):
        raise ForkError(f"{FORK_KEY}.session_key must be a string")
    if not _is_offset(offset):
        raise ForkError(f"{FORK_KEY}.offset must be a Kafka offset (an integer from 0)")
    first = named.get("first_offset")
    if "first_offset" in named and not (_is_offset(first) and first <= offset):
        raise ForkError(
            f"{FORK_KEY}.first_offset must be a Kafka offset (an integer from 0) "
            f"at most {FORK_KEY}.offset ({offset})"
        )
    try:
        source_key = validate_session_key(raw_key)
        check_tenant_owns_session(envelope.tenant, source_key)
    except InvalidSessionKeyError as exc:
        raise ForkError(f"{FORK_KEY}.session_key is not a session of this tenant: {exc}") from exc
    except TenantMismatchError as exc:
        raise ForkError(f"{FORK_KEY}.session_key is another tenant's session: {exc}") from exc
    if source_key == envelope.session_key:
        raise ForkError("a session cannot fork from itself")
    return ForkSource(source_key, Offset(offset), None if first is None else Offset(first))


def _is_offset(value: object) -> bool:
    """Whether `value` is a Kafka offset: an int (not a bool) of ``[0, INT64_MAX]``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


def fork_event(source: ForkSource, *, event_id: str, timestamp: float) -> Event:
    """The record that makes a new session a fork of `source`.

    ``first_offset`` is written only when `source` has one: a source without
    it gives the same bytes as before the field existed.
    """
    named: dict[str, Any] = {"session_key": source.session_key, "offset": source.offset}
    if source.first_offset is not None:
        named["first_offset"] = source.first_offset
    return pipeline_event({FORK_KEY: named}, event_id=event_id, timestamp=timestamp)


def is_fork(record: LoggedEvent) -> bool:
    """Whether `record` is a fork record (a malformed one counts as one)."""
    try:
        return fork_source(record.envelope) is not None
    except ForkError:
        return True


def inherited(line: Iterable[LoggedEvent]) -> list[LoggedEvent]:
    """The records a fork inherits from `line`, its source's history up to the fork's offset.

    `line` is that history in order: the source's own records (their real
    offsets) after the records it inherited itself (negative offsets, with
    their origins). Fork records are left out, and so is what a deletion of
    the source dropped (:func:`~projections.fold.rebuild.current_incarnation`);
    each other record keeps the
    session it was appended to and where it is on that session's partition.

    Example: ``[r(-2, origin 5), fork(0), a(3), b(7)]`` -> ``[r(-4, origin 5),
    a(-3, origin 3), b(-2, origin 7)]``.
    """
    kept = [record for record in current_incarnation(line) if not is_fork(record)]
    count = len(kept)
    return [
        LoggedEvent(
            Offset(position - count - 1),
            record.envelope,
            record.offset if record.origin_offset is None else record.origin_offset,
        )
        for position, record in enumerate(kept)
    ]
