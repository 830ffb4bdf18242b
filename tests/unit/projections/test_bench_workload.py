"""The benchmarks' synthetic workload, pinned byte for byte by checked-in golden files.

The figures of ``ctxstream bench core`` (and of the benchmarks that fold
:func:`ctxstream.bench.workload.quiet_session`) are comparable across
commits only while the workload is the same. Each file in
``tests/fixtures/bench_workload/`` holds the records one call of
:data:`CASES` returns, one line per record: ``{"offset":N,"envelope":E}``,
where ``E`` is the envelope exactly as :func:`schemas.codec.encode` writes it
to the `events` topic. The cases are small but cover the defaults, other
seeds, other summary periods (1 and 2, besides the default 4), another session
key, and both generators; each bench case is long enough to hold at least two
rolling summaries.

Beside the golden files, properties written from the module's description
rather than its code: offsets, ids and timestamps rise one by one; each
invocation is a user question, a model reply, one to three tool calls each
answered at once by its response, an answer that reports usage and sometimes a
state-only event; a summary follows every ``summary_every``-th invocation
(from the second on), starts at the first event and ends at the last event of
the invocation before the newest; a prefix of a longer session is the shorter
one; the errors name their arguments. Picks computed outside the code are in
``tests/unit/ctxstream/test_bench_core.py``.

The tests never write the golden files. When the workload changes on
purpose (which makes older benchmark figures incomparable), run from the
repository root::

    python -m tests.unit.projections.test_bench_workload

which calls :func:`regenerate`: it writes every file of :data:`CASES` from the
current code and says which ones changed. Read ``git diff
tests/fixtures/bench_workload`` before committing them.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

import orjson
import pytest

from ctxstream.bench.workload import (
    BENCH_SESSION,
    FIRST_TIMESTAMP,
    SUMMARY_EVERY,
    bench_session,
    quiet_session,
)
from projections.event_kinds import summary_request_id
from schemas.codec import decode_envelope, encode
from schemas.event import Event
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent

GOLDEN: Final = Path(__file__).parents[2] / "fixtures" / "bench_workload"
OTHER_SESSION: Final = SessionKey("acme/support/u42/s7")

#: Golden file name -> the call whose records it holds.
CASES: Final[dict[str, Callable[[], list[LoggedEvent]]]] = {
    "bench-default-60.jsonl": lambda: bench_session(60),
    "bench-seed7-every2-50.jsonl": lambda: bench_session(50, seed=7, summary_every=2),
    "bench-seed3-every1-other-key-30.jsonl": lambda: bench_session(
        30, seed=3, summary_every=1, session_key=OTHER_SESSION
    ),
    "quiet-default-5.jsonl": lambda: quiet_session(5),
    "quiet-other-key-3.jsonl": lambda: quiet_session(3, session_key=OTHER_SESSION),
}


def _rendered(records: list[LoggedEvent]) -> bytes:
    """The golden file's bytes for `records`."""
    return b"".join(
        b'{"offset":%d,"envelope":%s}\n' % (record.offset, encode(record.envelope))
        for record in records
    )


def regenerate() -> None:
    """Write every golden file of CASES from the current code. Never called by the tests."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, make in sorted(CASES.items()):
        path = GOLDEN / name
        content = _rendered(make())
        before = path.read_bytes() if path.exists() else None
        if before != content:
            path.write_bytes(content)
            sys.stdout.write(f"wrote {path}\n")


@pytest.mark.parametrize("name", sorted(CASES))
def test_workload_is_byte_for_byte_the_golden_file(name: str) -> None:
    records = CASES[name]()
    expected = (GOLDEN / name).read_bytes()
    # Line by line, so a failure shows the first record that differs.
    assert _rendered(records).decode().splitlines() == expected.decode().splitlines()
    assert _rendered(records) == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_lines_decode_to_the_records(name: str) -> None:
    records = CASES[name]()
    lines = (GOLDEN / name).read_bytes().splitlines()
    assert len(lines) == len(records)
    for line, record in zip(lines, records, strict=True):
        parsed = orjson.loads(line)
        assert parsed["offset"] == record.offset
        assert decode_envelope(orjson.dumps(parsed["envelope"])) == record.envelope


def test_golden_files_are_exactly_the_cases() -> None:
    assert sorted(path.name for path in GOLDEN.iterdir()) == sorted(CASES)


def _events(records: list[LoggedEvent]) -> list[Event]:
    return [record.envelope.event for record in records]


def _invocations(events: list[Event]) -> list[tuple[str, list[Event]]]:
    """Runs of consecutive events sharing an invocation id, in order."""
    return [
        (invocation, list(run))
        for invocation, run in itertools.groupby(events, key=lambda e: e.invocation_id)
    ]


def _texts(event: Event) -> list[str]:
    assert event.content is not None
    return [part.text for part in event.content.parts or [] if part.text is not None]


@pytest.mark.parametrize(
    ("seed", "summary_every", "session_key", "tenant"),
    [
        (0, 4, BENCH_SESSION, "bench"),
        (7, 2, BENCH_SESSION, "bench"),
        (3, 1, OTHER_SESSION, "acme"),
        (11, 3, SessionKey("t-9/app/u/s"), "t-9"),
    ],
)
def test_bench_session_has_the_described_shape(
    seed: int, summary_every: int, session_key: SessionKey, tenant: str
) -> None:
    size = 240
    records = bench_session(size, seed=seed, summary_every=summary_every, session_key=session_key)
    assert len(records) == size
    assert [record.offset for record in records] == list(range(size))
    for record in records:
        assert record.envelope.tenant == tenant
        assert record.envelope.session_key == session_key
        assert record.envelope.producer_id == "bench"
        assert record.envelope.idempotency_key == record.envelope.event.id
    events = _events(records)
    assert [event.id for event in events] == [f"e{n}" for n in range(1, size + 1)]
    assert [event.timestamp for event in events] == [
        FIRST_TIMESTAMP + n for n in range(1, size + 1)
    ]

    runs = _invocations(events)
    # The last run may be cut short by `size`; every complete one is checked.
    complete, last = runs[:-1], runs[-1]
    assert last[1][0].author == "user"
    number = 0
    last_end: dict[int, float] = {}
    seen_calls: set[int] = set()
    seen_delta: set[bool] = set()
    seen_state_event: set[bool] = set()
    for index, (invocation, run) in enumerate(complete):
        if invocation.startswith("cmp-"):
            # A summary: alone in its run, right after every summary_every-th invocation.
            assert len(run) == 1
            (summary,) = run
            assert number % summary_every == 0
            assert number >= 2
            assert invocation == f"cmp-{summary.id.removeprefix('e')}"
            assert summary.author == "user"
            assert summary.content is None
            compaction = summary.actions.compaction
            assert compaction is not None
            assert compaction.start_timestamp == FIRST_TIMESTAMP + 1
            assert compaction.end_timestamp == last_end[number - 1]
            assert compaction.compacted_content.role == "model"
            assert [p.text for p in compaction.compacted_content.parts or []] == [
                f"summary of the conversation up to {number - 1}"
            ]
            assert summary_request_id(summary) == f"bench-request-{summary.id.removeprefix('e')}"
            continue
        number += 1
        assert invocation == f"inv{number}"
        following = complete[index + 1][0] if index + 1 < len(complete) else last[0]
        # No summary where none is due, and one where it is.
        due = number % summary_every == 0 and number >= 2
        assert following.startswith("cmp-") == due
        last_end[number] = run[-1].timestamp
        assert all(event.actions.compaction is None for event in run)

        question, reply, *middle = run
        assert question.author == "user"
        assert question.content is not None
        assert question.content.role == "user"
        assert _texts(question) == [f"question {number}"]
        delta = question.actions.state_delta
        assert delta in ({}, {"turn": number, "user:last_question": number})
        seen_delta.add(bool(delta))
        assert reply.author == "agent"
        assert reply.content is not None
        assert reply.content.role == "model"
        assert _texts(reply) == [f"let me look that up ({number})"]
        assert reply.usage_metadata is None

        state_event = middle[-1].content is None
        seen_state_event.add(state_event)
        if state_event:
            assert middle[-1].author == "agent"
            assert middle[-1].actions.state_delta == {"temp:scratch": number, "step": "done"}
            middle = middle[:-1]
        *pairs, answer = middle
        assert answer.author == "agent"
        assert answer.content is not None
        assert answer.content.role == "model"
        assert _texts(answer) == [f"here is what I found for {number}"]
        usage = answer.usage_metadata
        assert usage is not None
        assert usage.prompt_token_count is not None
        assert 800 <= usage.prompt_token_count < 1200
        assert usage.candidates_token_count is not None
        assert 40 <= usage.candidates_token_count < 100

        assert len(pairs) % 2 == 0
        calls = len(pairs) // 2
        assert 1 <= calls <= 3
        seen_calls.add(calls)
        for call in range(calls):
            request, response = pairs[2 * call], pairs[2 * call + 1]
            assert request.author == response.author == "agent"
            assert request.content is not None
            assert request.content.role == "model"
            assert response.content is not None
            assert response.content.role == "user"
            (call_part,) = request.content.parts or []
            (response_part,) = response.content.parts or []
            function_call = call_part.function_call
            function_response = response_part.function_response
            assert function_call is not None
            assert function_response is not None
            assert function_call.id == function_response.id == f"c{number}-{call}"
            assert function_call.name == function_response.name == "search"
            assert function_call.args == {"query": f"item {number}.{call}"}
            assert function_response.response == {"result": f"found {number}.{call}"}
    # Enough invocations for every pick to show each of its outcomes.
    assert number >= 15
    assert seen_calls == {1, 2, 3}
    assert seen_delta == {False, True}
    assert seen_state_event == {False, True}


def test_picks_follow_the_seed() -> None:
    def shape(seed: int) -> list[tuple[str, str, bool]]:
        return [
            (event.invocation_id, event.author, event.content is None)
            for event in _events(bench_session(200, seed=seed))
        ]

    assert shape(1) != shape(2)
    assert shape(0) != shape(5)
    # The default seed is 0, and the default period SUMMARY_EVERY.
    assert bench_session(120) == bench_session(120, seed=0, summary_every=SUMMARY_EVERY)
    assert bench_session(120) != bench_session(120, seed=1)


def test_same_arguments_give_the_same_bytes_and_shorter_is_a_prefix() -> None:
    longer = bench_session(150, seed=4, summary_every=3)
    again = bench_session(150, seed=4, summary_every=3)
    assert _rendered(longer) == _rendered(again)
    for size in (0, 1, 2, 9, 10, 11, 57, 149):
        assert bench_session(size, seed=4, summary_every=3) == longer[:size]
    assert _rendered(quiet_session(20)) == _rendered(quiet_session(20))
    assert quiet_session(7) == quiet_session(20)[:7]


def test_quiet_session_is_one_content_less_state_event_per_invocation() -> None:
    size = 12
    records = quiet_session(size, session_key=OTHER_SESSION)
    assert [record.offset for record in records] == list(range(size))
    for serial, record in enumerate(records):
        envelope = record.envelope
        assert envelope.tenant == "acme"
        assert envelope.session_key == OTHER_SESSION
        assert envelope.producer_id == "bench"
        assert envelope.idempotency_key == f"q{serial}"
        event = envelope.event
        assert event.id == f"q{serial}"
        assert event.invocation_id == f"inv{serial}"
        assert event.author == "user"
        assert event.timestamp == FIRST_TIMESTAMP + serial
        assert event.content is None
        assert event.actions.state_delta == {"turn": serial}
        assert event.actions.compaction is None
    assert all(r.envelope.session_key == BENCH_SESSION for r in quiet_session(3))


def test_empty_sessions_and_bad_arguments() -> None:
    assert bench_session(0) == []
    assert bench_session(0, summary_every=1) == []
    assert len(bench_session(1, summary_every=1)) == 1
    assert quiet_session(0) == []
    assert len(quiet_session(1)) == 1
    with pytest.raises(ValueError, match=r"^need events >= 0 and summary_every >= 1, got -1, 4$"):
        bench_session(-1)
    with pytest.raises(ValueError, match=r"^need events >= 0 and summary_every >= 1, got 10, 0$"):
        bench_session(10, summary_every=0)
    with pytest.raises(ValueError, match=r"^need events >= 0 and summary_every >= 1, got 5, -2$"):
        bench_session(5, summary_every=-2)
    with pytest.raises(ValueError, match=r"^need events >= 0, got -1$"):
        quiet_session(-1)


if __name__ == "__main__":
    regenerate()
