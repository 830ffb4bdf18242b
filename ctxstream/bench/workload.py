"""The benchmarks' synthetic workload. Pure: no I/O, no clock, no randomness.

:func:`bench_session` is one long session of invocations of about ten events
(a user message, model text, one to three tool call/response pairs, a final
answer with token usage), with a rolling summary every ``summary_every``
invocations, shaped as ADK's token-threshold path writes it (reference §5.4),
so the visible context stays bounded however long the session grows: the
session ``bench core``, ``bench reads``, ``bench restore`` and many tests
fold. :func:`quiet_session` is the armed-trigger workload of the security
review's M1 probe. (The ingest, fold and compaction benchmarks run the agents
workload instead, :mod:`ctxstream.bench.agents`.) Choices come from a hash of
the seed and the position, so the same arguments always give the same records;
``ctxstream/bench/README.md`` says more.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, Final

from projections.compaction.summary_request import with_summary_request_id
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey, parse_session_key
from schemas.logged_event import LoggedEvent

BENCH_SESSION: Final = SessionKey("bench/app/user/session")
FIRST_TIMESTAMP: Final = 1_700_000_000.0
SUMMARY_EVERY: Final = 4


def _choice(seed: int, position: int, salt: str, count: int) -> int:
    """A deterministic pick in ``range(count)`` for this seed, position and purpose."""
    digest = hashlib.blake2b(f"{seed}:{position}:{salt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def bench_session(
    events: int,
    *,
    seed: int = 0,
    summary_every: int = SUMMARY_EVERY,
    session_key: SessionKey = BENCH_SESSION,
) -> list[LoggedEvent]:
    """The first `events` records of the synthetic session, offsets 0, 1, 2, ...

    Example: ``bench_session(3)`` is a user message, a model reply and the
    first tool call of invocation ``inv1``.

    Raises:
        ValueError: `events` is negative or `summary_every` is not positive.
    """
    if events < 0 or summary_every < 1:
        raise ValueError(f"need events >= 0 and summary_every >= 1, got {events}, {summary_every}")
    tenant = parse_session_key(session_key).tenant
    records: list[LoggedEvent] = []
    for event in _events(seed, summary_every):
        if len(records) == events:
            break
        envelope = Envelope(
            tenant=tenant,
            session_key=session_key,
            producer_id="bench",
            idempotency_key=event.id,
            event=event,
        )
        records.append(LoggedEvent(Offset(len(records)), envelope))
    return records


def quiet_session(events: int, *, session_key: SessionKey = BENCH_SESSION) -> list[LoggedEvent]:
    """`events` content-less invocations, one state-only event each, offsets 0, 1, 2, ...

    Raises:
        ValueError: `events` is negative.
    """
    if events < 0:
        raise ValueError(f"need events >= 0, got {events}")
    tenant = parse_session_key(session_key).tenant
    return [
        LoggedEvent(
            Offset(serial),
            Envelope(
                tenant=tenant,
                session_key=session_key,
                producer_id="bench",
                idempotency_key=f"q{serial}",
                event=Event.model_validate(
                    {
                        "id": f"q{serial}",
                        "invocation_id": f"inv{serial}",
                        "author": "user",
                        "timestamp": FIRST_TIMESTAMP + serial,
                        "actions": {"state_delta": {"turn": serial}},
                    }
                ),
            ),
        )
        for serial in range(events)
    ]


def _events(seed: int, summary_every: int) -> Iterator[Event]:
    """The endless event stream of the synthetic session."""
    clock = FIRST_TIMESTAMP
    first_timestamp = clock + 1.0
    serial = 0
    ends: list[float] = []  # the last timestamp of each invocation
    invocation = 0
    while True:
        invocation += 1
        inv = f"inv{invocation}"
        for author, fields in _invocation(seed, invocation):
            serial += 1
            clock += 1.0
            yield Event.model_validate(
                {"id": f"e{serial}", "invocation_id": inv, "author": author, "timestamp": clock}
                | fields
            )
        ends.append(clock)
        if invocation % summary_every == 0 and len(ends) >= 2:
            # Rolling: from the very first event (the previous summary's start)
            # to the end of the invocation before the newest, kept raw.
            serial += 1
            clock += 1.0
            yield _summary(serial, clock, first_timestamp, ends[-2], invocation)


def _invocation(seed: int, invocation: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(author, fields) of one invocation's events."""
    user: dict[str, Any] = {
        "content": {"role": "user", "parts": [{"text": f"question {invocation}"}]}
    }
    if _choice(seed, invocation, "user-delta", 2):
        user["actions"] = {"state_delta": {"turn": invocation, "user:last_question": invocation}}
    yield "user", user
    yield "agent", _text(f"let me look that up ({invocation})")
    for call in range(1 + _choice(seed, invocation, "calls", 3)):
        call_id = f"c{invocation}-{call}"
        args = {"query": f"item {invocation}.{call}"}
        yield (
            "agent",
            {
                "content": {
                    "role": "model",
                    "parts": [{"function_call": {"id": call_id, "name": "search", "args": args}}],
                }
            },
        )
        result = {"result": f"found {invocation}.{call}"}
        yield (
            "agent",
            {
                "content": {
                    "role": "user",
                    "parts": [
                        {"function_response": {"id": call_id, "name": "search", "response": result}}
                    ],
                }
            },
        )
    answer = _text(f"here is what I found for {invocation}")
    answer["usage_metadata"] = {
        "prompt_token_count": 800 + _choice(seed, invocation, "prompt", 400),
        "candidates_token_count": 40 + _choice(seed, invocation, "candidates", 60),
    }
    yield "agent", answer
    if _choice(seed, invocation, "state-event", 3) == 0:
        yield "agent", {"actions": {"state_delta": {"temp:scratch": invocation, "step": "done"}}}


def _text(text: str) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": [{"text": text}]}}


def _summary(serial: int, timestamp: float, start: float, end: float, invocation: int) -> Event:
    """A rolling summary over ``[start, end]``, naming its compaction request."""
    event = Event.model_validate(
        {
            "id": f"e{serial}",
            "invocation_id": f"cmp-{serial}",
            "author": "user",
            "timestamp": timestamp,
            "actions": {
                "compaction": {
                    "start_timestamp": start,
                    "end_timestamp": end,
                    "compacted_content": {
                        "role": "model",
                        "parts": [{"text": f"summary of the conversation up to {invocation - 1}"}],
                    },
                }
            },
        }
    )
    return with_summary_request_id(event, f"bench-request-{serial}")
