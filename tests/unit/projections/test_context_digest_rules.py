"""Which lists a context digest settles and which tails it extends, written out by hand.

Two checks per case: the count and fingerprint equal those of the session assembled
from scratch (``rebuild_contents``, hashed as the fingerprint is defined), and which
events the digest assembled (a spy on the assembly): only the tail when it extends,
everything when it must start over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pytest

import projections.contents.context_digest as context_digest
from projections.contents.assembly import ContentsRequest, paired_included
from projections.contents.context_digest import (
    ContextDigest,
    DigestedContext,
    canonical_contents,
    digest_context,
)
from projections.contents.context_view import rebuild_view
from projections.fold.rebuild import rebuild_contents
from schemas.event import Content, Event, content_to_json
from tests.support.events import (
    call_event,
    event,
    logged,
    response_event,
    summary_event,
    text_event,
)
from tests.support.fingerprints import fingerprint_of

VIEW: Final = ContentsRequest()


def _expected(events: Sequence[Event], request: ContentsRequest = VIEW) -> tuple[int, str]:
    contents = rebuild_contents(logged(events, range(len(events))), request)
    return len(contents), fingerprint_of([content_to_json(content) for content in contents])


def _digested(
    events: Sequence[Event],
    previous: ContextDigest | None = None,
    request: ContentsRequest = VIEW,
) -> DigestedContext:
    """The digest of the view of `events` (offsets 0, 1, ...), checked against the oracle."""
    view = rebuild_view(request, logged(events, range(len(events))))
    context = digest_context(view, previous)
    assert (context.items, context.fingerprint) == _expected(events, request)
    return context


@pytest.fixture
def assembled(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of each list the digest assembles from now on."""
    lists: list[list[str]] = []

    def spy(visible: Sequence[Event], request: ContentsRequest) -> list[Event]:
        lists.append([each.id for each in visible])
        return paired_included(visible, request)

    monkeypatch.setattr(context_digest, "paired_included", spy)
    return lists


def _settled(events: Sequence[Event]) -> ContextDigest:
    digest = _digested(events).digest
    assert digest is not None
    assert [each.id for each in digest.events] == [each.id for each in events]
    return digest


# -- which lists settle ------------------------------------------------------------


def test_a_list_whose_last_two_events_share_a_timestamp_settles() -> None:
    events = [text_event("u1", "i1", 100.0), text_event("u2", "i1", 100.0, author="agent")]
    assert _settled(events).newest_timestamp == 100.0


def test_a_list_whose_last_event_is_not_the_newest_does_not_settle() -> None:
    events = [
        text_event("u1", "i1", 100.0),
        text_event("u2", "i1", 105.0, author="agent"),
        text_event("u3", "i2", 103.0),
    ]
    assert _digested(events).digest is None


def test_a_summary_end_after_the_last_event_keeps_the_list_unsettled() -> None:
    # The summary, stamped 40, ends at 60: the last event (48) is not the newest.
    events = [
        text_event("u1", "i1", 45.0),
        summary_event("s1", 50.0, 60.0, 40.0),
        text_event("u2", "i2", 48.0),
    ]
    assert _digested(events).digest is None
    # And the next snapshot is still right: u3 (49) sorts before the summary's end.
    _digested([*events, text_event("u3", "i2", 49.0, author="agent")])


@pytest.mark.parametrize(
    "last",
    [
        call_event("c1", "i1", 101.0, "k1"),
        response_event("r1", "i1", 101.0, "k0"),
        event("b1", "agent", 101.0, [{"functionCall": {"name": "t", "id": "k1"}}, {"text": "y"}]),
    ],
    ids=["call", "response", "call and text"],
)
def test_a_list_ending_with_tool_traffic_settles_up_to_its_last_plain_event(last: Event) -> None:
    events = [text_event("u1", "i1", 100.0), last]
    digest = _digested(events).digest
    assert digest is not None
    assert [each.id for each in digest.events] == ["u1"]
    assert (digest.items, digest.newest_timestamp) == (1, 100.0)
    # The traffic after it is an extension: the next snapshot assembles only what follows.
    _digested([*events, text_event("u2", "i2", 102.0)], digest)


def test_traffic_answering_a_call_before_the_last_plain_event_settles_nothing() -> None:
    # k1 is called before u2 and answered after it: u2 cannot end a settled list.
    events = [
        call_event("c1", "i1", 100.0, "k1"),
        text_event("u2", "i1", 101.0),
        response_event("r1", "i1", 102.0, "k1"),
    ]
    assert _digested(events).digest is None


def test_an_extension_ending_with_tool_traffic_settles_up_to_its_last_plain_event(
    assembled: list[list[str]],
) -> None:
    digest = _settled(_BASE)
    tail = [text_event("u4", "i2", 103.0), call_event("c4", "i2", 104.0, "k4")]
    context = _digested([*_BASE, *tail], digest)
    assert assembled[1:] == [["u4"], ["c4"]]
    assert context.digest is not None
    assert [each.id for each in context.digest.events] == [*(e.id for e in _BASE), "u4"]
    assert context.digest.newest_timestamp == 103.0


def test_a_scoped_view_keeps_no_digest() -> None:
    request = ContentsRequest(isolation_scope="task-1")
    events = [
        text_event("u1", "i1", 100.0, isolation_scope="task-1"),
        text_event("u2", "i1", 101.0, author="agent", isolation_scope="task-1"),
    ]
    assert _digested(events, request=request).digest is None


# -- which tails extend a settled list -----------------------------------------------

_BASE: Final = [text_event("u1", "i1", 100.0), text_event("u2", "i1", 101.0, author="agent")]


def test_a_tail_of_newer_plain_events_is_assembled_alone(assembled: list[list[str]]) -> None:
    digest = _settled(_BASE)
    tail = [text_event("u3", "i2", 102.0), text_event("u4", "i2", 102.0, author="agent")]
    context = _digested([*_BASE, *tail], digest)
    assert assembled[1:] == [["u3", "u4"]]
    assert context.digest is not None
    assert [each.id for each in context.digest.events] == ["u1", "u2", "u3", "u4"]
    assert context.digest.newest_timestamp == 102.0


def test_a_tail_at_the_settled_newest_timestamp_assembles_everything(
    assembled: list[list[str]],
) -> None:
    digest = _settled(_BASE)
    _digested([*_BASE, text_event("u3", "i2", 101.0)], digest)
    # From the start again (in parts, at the cuts the new list has: after u1 only).
    assert assembled[1:] == [["u1"], ["u2", "u3"]]


def test_a_tail_older_than_the_settled_list_sorts_into_it() -> None:
    # With a summary present masking sorts by timestamp: u3 (101) goes before u2 (102).
    events = [
        summary_event("s1", 90.0, 95.0, 96.0),
        text_event("u1", "i1", 100.0),
        text_event("u2", "i1", 102.0, author="agent"),
    ]
    digest = _settled(events)
    _digested([*events, text_event("u3", "i2", 101.0)], digest)


@pytest.mark.parametrize(
    "fields",
    [
        {"input_transcription": {"text": "spoken"}},
        {"output_transcription": {"text": "said"}},
        {"long_running_tool_ids": ["k5"]},
    ],
    ids=["input transcription", "output transcription", "long-running tool"],
)
def test_a_tail_with_transcriptions_or_long_running_tools_assembles_everything(
    assembled: list[list[str]], fields: dict[str, Any]
) -> None:
    digest = _settled(_BASE)
    _digested([*_BASE, text_event("u3", "i2", 102.0, **fields)], digest)
    assert assembled[1:] == [["u1", "u2", "u3"]]


def test_a_tail_answering_a_settled_call_assembles_everything() -> None:
    # The response moves up to its call (§8.7): the settled contents are no prefix.
    events = [
        text_event("u1", "i1", 100.0),
        call_event("c1", "i1", 101.0, "k1"),
        text_event("u2", "i1", 102.0),
    ]
    digest = _settled(events)
    assert digest.named_ids == frozenset({"k1"})
    _digested([*events, response_event("r1", "i1", 103.0, "k1")], digest)


def test_an_extension_adds_the_ids_its_tail_names() -> None:
    first = [text_event("u1", "i1", 100.0)]
    tail = [
        call_event("c1", "i1", 101.0, "k1"),
        response_event("r1", "i1", 102.0, "k1"),
        call_event("c2", "i1", 103.0, "k2"),
        text_event("u2", "i1", 104.0),
    ]
    context = _digested([*first, *tail], _settled(first))
    extended = context.digest
    assert extended is not None
    assert extended.named_ids == frozenset({"k1", "k2"})
    # So a later answer to k2 (unanswered, further back) starts over, and stays right.
    _digested([*first, *tail, response_event("r2", "i1", 105.0, "k2")], extended)


def test_a_tail_ending_with_a_call_leaves_the_digest_on_the_settled_list() -> None:
    digest = _settled(_BASE)
    context = _digested([*_BASE, call_event("c1", "i2", 102.0, "k1")], digest)
    assert context.digest is digest


# -- the canonical JSON -------------------------------------------------------------


def test_contents_built_in_python_hash_as_their_json() -> None:
    # Arguments a tool wrote in Python: bytes become text and a set a list, as genai's
    # JSON dump has them; non-ASCII stays as it is, in UTF-8.
    content = Content.model_validate(
        {
            "role": "model",
            "parts": [
                {"text": "café"},
                {"functionCall": {"name": "t", "args": {"b": b"ab", "s": {1}}}},
            ],
        }
    )
    assert canonical_contents([content]) == [
        '{"parts":[{"text":"café"},{"functionCall":{"args":{"b":"ab","s":[1]},"name":"t"}}],'
        '"role":"model"}'.encode()
    ]


# -- after a summary ----------------------------------------------------------------

_TURNS: Final = [
    text_event("u1", "i1", 100.0),
    text_event("a1", "i1", 101.0, author="agent"),
    text_event("u2", "i2", 110.0),
    text_event("a2", "i2", 111.0, author="agent"),
]


def _extended_twice() -> ContextDigest:
    """The digest of `_TURNS`, settled after two turns and extended by two: cut after a1."""
    first = _settled(_TURNS[:2])
    second = _digested(_TURNS, first).digest
    assert second is not None
    assert second.cuts[-2:] == ((2, 2), (4, 4))
    return second


def test_a_summary_leaving_the_run_after_a_cut_assembles_only_itself(
    assembled: list[list[str]],
) -> None:
    digest = _extended_twice()
    summary = summary_event("s1", 100.0, 101.0, 112.0)
    newer = text_event("u3", "i3", 120.0)
    assembled.clear()
    context = _digested([*_TURNS, summary, newer], digest)
    # The summary alone, the kept run's digests reused, the newer event as an extension.
    assert assembled == [["s1"], ["u3"]]
    after = context.digest
    assert after is not None
    assert [each.id for each in after.events] == ["u2", "a2", "s1", "u3"]
    # Head and run are settled for what follows (a cut after them), and the next event
    # is an extension of the whole.
    assert [cut for cut, _ in after.cuts] == [3, 4]
    assembled.clear()
    _digested([*_TURNS, summary, newer, text_event("u4", "i4", 121.0)], after)
    assert assembled == [["u4"]]


def test_a_kept_run_answering_a_call_in_the_head_assembles_everything(
    assembled: list[list[str]],
) -> None:
    # u0 (95) stays before the summary's range and calls k1; the kept run answers it.
    call = call_event("c0", "i0", 95.0, "k1")
    answer = response_event("r1", "i2", 110.5, "k1")
    events = [call, text_event("u1", "i1", 100.0), text_event("a1", "i1", 101.0, author="agent")]
    first = _digested(events).digest
    assert first is not None
    later = [text_event("u2", "i2", 110.0), answer, text_event("a2", "i2", 111.0, author="agent")]
    second = _digested([*events, *later], first).digest
    assert second is not None
    assembled.clear()
    _digested([*events, *later, summary_event("s1", 100.0, 101.0, 112.0)], second)
    assert assembled[-1] == ["c0", "u2", "r1", "a2", "s1"]


def test_a_summary_covering_the_kept_run_assembles_everything(
    assembled: list[list[str]],
) -> None:
    digest = _extended_twice()
    assembled.clear()
    # The summary's end reaches u2: the run after the cut is no longer shown whole.
    _digested([*_TURNS, summary_event("s1", 100.0, 110.0, 112.0)], digest)
    assert all("a2" not in each or "s1" in each for each in assembled)
    assert any("s1" in each for each in assembled)


def test_an_event_older_than_the_kept_run_after_the_summary_assembles_everything(
    assembled: list[list[str]],
) -> None:
    digest = _extended_twice()
    assembled.clear()
    late = text_event("u9", "i9", 105.0)  # after the summary in the log, older than u2
    _digested([*_TURNS, summary_event("s1", 100.0, 101.0, 112.0), late], digest)
    assert ["u2", "a2", "s1", "u9"] in assembled


def test_a_kept_run_with_its_own_tool_traffic_is_reused(assembled: list[list[str]]) -> None:
    turns = [
        text_event("u1", "i1", 100.0),
        text_event("a1", "i1", 101.0, author="agent"),
        call_event("c2", "i2", 110.0, "k2"),
        response_event("r2", "i2", 111.0, "k2"),
        text_event("a2", "i2", 112.0, author="agent"),
    ]
    first = _settled(turns[:2])
    second = _digested(turns, first).digest
    assert second is not None
    assert [cut for cut, _ in second.cuts][-2:] == [2, 5]
    assembled.clear()
    _digested([*turns, summary_event("s1", 100.0, 101.0, 113.0)], second)
    assert assembled == [["s1"]]


def _extended(turns: Sequence[Event], every: int = 2) -> ContextDigest:
    """The digest of `turns`, settled on the first `every` and extended `every` at a time."""
    digest = _settled(turns[:every])
    for end in range(2 * every, len(turns) + 1, every):
        extended = _digested(turns[:end], digest).digest
        assert extended is not None
        digest = extended
    return digest


def test_a_run_after_a_later_cut_is_reused_when_the_first_one_is_covered(
    assembled: list[list[str]],
) -> None:
    turns = [*_TURNS, text_event("u3", "i3", 115.0), text_event("a3", "i3", 116.0, author="agent")]
    digest = _extended(turns)
    assert [cut for cut, _ in digest.cuts][-3:] == [2, 4, 6]
    assembled.clear()
    # The summary covers u1 to a2: the run after the cut at 2 is gone, the one after 4 shown.
    summary = summary_event("s1", 100.0, 111.0, 117.0)
    after = _digested([*turns, summary], digest).digest
    assert assembled == [["s1"]]
    # Nothing followed the summary: the digest is of the shown head and run, for this view.
    assert after is not None
    assert [each.id for each in after.events] == ["u3", "a3", "s1"]
    assembled.clear()
    _digested([*turns, summary, text_event("u4", "i4", 121.0)], after)
    assert assembled == [["u4"]]


def test_a_summary_between_runs_skips_to_the_run_after_it(assembled: list[list[str]]) -> None:
    turns = [*_TURNS, text_event("u3", "i3", 115.0), text_event("a3", "i3", 116.0, author="agent")]
    digest = _extended(turns)
    assembled.clear()
    # s2 covers the gap [112, 113]: the run from u2 would sort after it, the run from u3 not.
    summaries = [summary_event("s1", 100.0, 101.0, 117.0), summary_event("s2", 112.0, 113.0, 118.0)]
    _digested([*turns, *summaries], digest)
    assert assembled == [["u2", "a2", "s1", "s2"]]


def test_a_tail_answering_a_call_of_the_kept_run_assembles_everything(
    assembled: list[list[str]],
) -> None:
    # a2's turn calls k3 before it answers; nobody answers k3 until after the summary.
    turns = [*_TURNS[:3], call_event("c3", "i2", 110.5, "k3"), _TURNS[3]]
    digest = _digested(turns, _settled(turns[:2])).digest
    assert digest is not None
    assembled.clear()
    answer = response_event("r3", "i3", 120.0, "k3")
    _digested([*turns, summary_event("s1", 100.0, 101.0, 112.0), answer], digest)
    assert ["s1"] not in assembled
    assert any("r3" in each for each in assembled)


def test_a_summary_among_the_new_events_keeps_the_previous_digest() -> None:
    digest = _extended_twice()
    events = [
        *_TURNS,
        text_event("u3", "i3", 120.0),
        summary_event("s1", 100.0, 101.0, 121.0),
        text_event("u4", "i4", 122.0),
    ]
    assert _digested(events, digest).digest is digest
