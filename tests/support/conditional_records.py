"""Generated sessions with conditional records and creation records mixed in.

:func:`with_conditions` takes sessions of another strategy and, now and then,
makes a record conditional (expecting the right writer offset, ``-1``, or a
stale one) or puts a creation record before it (always expecting ``-1``,
more often right after a deletion), offsets renumbered with gaps. The right
writer offset comes from :class:`~tests.support.conditions_oracle.WriterOracle`.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from schemas.creation_mark import creation_event, is_creation
from schemas.deletion_mark import is_deletion
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from tests.support.conditions_oracle import WriterOracle
from tests.support.events import PRODUCER, SESSION, tenant_of

SEEDS = st.integers(0, 2**64 - 1)


@st.composite
def with_conditions(
    draw: st.DrawFn, base: st.SearchStrategy[list[LoggedEvent]]
) -> list[LoggedEvent]:
    """A session of `base` with conditional and creation records (see the module docstring)."""
    rng = random.Random(draw(SEEDS))  # noqa: S311 - test data, not a secret
    return conditional_records(draw(base), rng)


def creation_record(offset: int, number: int, state: dict[str, object]) -> LoggedEvent:
    """A creation record of :data:`SESSION` at `offset`, expecting ``-1``."""
    event = creation_event(event_id=f"created-{number}", timestamp=0.0, state=state)
    return LoggedEvent(Offset(offset), conditional_envelope(SESSION, event, -1))


def conditional_envelope(
    key: SessionKey, event: Event, expected: int | None, idempotency_key: str | None = None
) -> Envelope:
    """`event` as a record of session `key` expecting `expected` (None: unconditional)."""
    return Envelope(
        tenant=tenant_of(key),
        session_key=key,
        producer_id=PRODUCER,
        idempotency_key=idempotency_key or f"{key}/{event.id}",
        event=event,
        expected_offset=expected,
    )


def conditional_records(records: list[LoggedEvent], rng: random.Random) -> list[LoggedEvent]:
    """`records` with conditions and creations drawn from `rng`."""
    oracle = WriterOracle()
    out: list[LoggedEvent] = []
    offset = records[0].offset if records else 0
    after_deletion = True
    for record in records:
        if rng.random() < (0.5 if after_deletion else 0.04):
            state: dict[str, object] = {f"init{len(out)}": len(out), "shared": rng.randint(0, 3)}
            creation = creation_record(offset, len(out), state)
            out.append(creation)
            oracle.feed(creation)
            offset += rng.randint(1, 3)
        after_deletion = is_deletion(record.envelope.event)
        expected = expected_offset_for(rng, oracle, [record.offset for record in out])
        env: Envelope = record.envelope
        if expected is not None:
            env = env.model_copy(update={"expected_offset": expected})
        logged = LoggedEvent(Offset(offset), env, record.origin_offset)
        out.append(logged)
        oracle.feed(logged)
        offset += rng.randint(1, 3)
    assert all(is_creation(r.envelope.event) <= (r.envelope.expected_offset == -1) for r in out)
    return out


def expected_offset_for(rng: random.Random, oracle: WriterOracle, earlier: list[int]) -> int | None:
    """An expected offset for a session's next record: mostly none, else right, -1 or stale.

    `oracle` has seen the session's records so far, at the offsets `earlier`.
    """
    pick = rng.random()
    if pick < 0.7:
        return None
    if pick < 0.9:
        return oracle.writer
    if pick < 0.95:
        return -1
    stale = [offset for offset in earlier if offset != oracle.writer]
    return rng.choice(stale) if stale else oracle.writer + 1
