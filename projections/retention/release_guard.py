"""Whether an event names something a released projection no longer holds. Pure.

A projection that released the start of its session (:mod:`projections.retention.log_retention`)
keeps the ids those events named only as digests
(:class:`~projections.retention.released_ids.ReleasedIds`). Before the fold applies an
event to it, :func:`released_name` looks at every id the event names the way
the fold would look it up: its invocation id (an invocation that comes back,
or a copy of a released event, which the whole projection would recognise as
a retry), the invocation a rewind goes back to, every call id it calls,
answers, marks long-running or asks a confirmation or credential for, the
call ids its branch names (``<tool>@<id>``), and the request its summary
answers. Any of them released: the fold needs the history.

An id the projection holds is not looked up: a digest and a search per id per
event would put the released ids on every event's path. Held, and so never
released, are the invocations of the live events (:class:`HeldIds`: an event
naming a released one was refused before it could join them, and retention
takes the released ones out) and the call ids whose first naming live event is
still held (every event naming them is; any held covered event stays in the
view). Most events continue an invocation and answer a call already held, so
the digests are computed for the new ids only.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from typing import NamedTuple

from projections.compaction.live_order import call_ids_named
from projections.contents.visibility import branch_call_refs
from projections.event_kinds import summary_request_id
from projections.retention.released_ids import Kind, ReleasedIds
from schemas.event import Event


def named_ids(event: Event) -> Iterator[tuple[Kind, str]]:
    """Every id `event` names, with its kind (empty ids left out)."""
    if event.invocation_id:
        yield "invocation", event.invocation_id
    target = event.actions.rewind_before_invocation_id
    if target:
        yield "invocation", target
    for call_id in call_ids_named(event):
        if call_id:
            yield "call", call_id
    for ref in branch_call_refs(event):
        yield "call", ref
    request_id = summary_request_id(event)
    if request_id:
        yield "request", request_id


class HeldIds(NamedTuple):
    """Ids a projection holds, which no released event can have named alone.

    Attributes:
        invocations: The invocation ids of the live events.
        call_positions: Call id -> the first live position that names it.
        first_live: The first live position held.
    """

    invocations: Container[str] = frozenset()
    call_positions: Mapping[str, int] = {}
    first_live: int = 0

    def holds(self, kind: Kind, value: str) -> bool:
        """Whether the projection holds `value`, an id of `kind`."""
        if kind == "invocation":
            return value in self.invocations
        if kind == "call":
            return self.call_positions.get(value, -1) >= self.first_live
        return False


def released_name(released: ReleasedIds, event: Event, held: HeldIds | None = None) -> str | None:
    """The first id `event` names that `released` holds, described; None when there is none.

    Ids `held` holds are not looked up.
    """
    for kind, value in named_ids(event):
        if held is not None and held.holds(kind, value):
            continue
        if released.has(kind, value):
            return f"the released {kind} {value!r}"
    return None
