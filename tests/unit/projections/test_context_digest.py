"""The fingerprint kept with a context digest equals the one of the whole context, assembled.

The oracle knows nothing of digests: the records the session has so far are
assembled from scratch by ``rebuild_contents`` (``build_contents`` of the
effective records) and hashed as the fingerprint is defined, each content's
canonical JSON by ``json.dumps`` (``tests.support.fingerprints``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import projections.contents.context_digest as context_digest
from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.contents.assembly import ContentsRequest, paired_included
from projections.contents.context_digest import (
    ContentPieces,
    ContextDigest,
    content_digests,
    digest_context,
)
from projections.contents.snapshot import snapshot_carrying, snapshot_with_digest, to_snapshot
from projections.event_kinds import is_summary
from projections.fold.projection import apply, empty_projection
from projections.fold.rebuild import rebuild_contents
from schemas.event import Content, Event, content_to_json
from schemas.logged_event import LoggedEvent
from tests.support.events import SESSION, logged
from tests.support.fingerprints import fingerprint_of
from tests.support.next_agent_oracle import expected_view_request
from tests.support.strategies import core_sessions, view_requests

VIEW: Final = ContentsRequest()


def _whole(records: Sequence[LoggedEvent], root: ContentsRequest) -> tuple[int, str]:
    """Items and fingerprint of the session's context, assembled and hashed in one piece.

    For the agent ADK's router would run next (`root`'s agent until one replies), as the
    snapshot describes it.
    """
    request = expected_view_request(records, root)
    contents = [content_to_json(content) for content in rebuild_contents(records, request)]
    return len(contents), fingerprint_of(contents)


@pytest.mark.core_property
@settings(deadline=None)
@given(core_sessions(refusals=True), view_requests(), st.integers(1, 4))
def test_the_digested_fingerprint_equals_the_whole_contexts_after_every_snapshot(
    log: list[LoggedEvent], request: ContentsRequest, every: int
) -> None:
    # A snapshot after every `every` records and after the last, as batches take them,
    # each from the digest the one before left.
    # The content digests carried along too, from one snapshot to the next.
    projection = empty_projection(SESSION, request)
    digest: ContextDigest | None = None
    pieces: ContentPieces | None = None
    for count, record in enumerate(log, start=1):
        projection = apply(projection, record)
        if count % every and count < len(log):
            continue
        snapshot, context = snapshot_carrying(projection, digest, pieces)
        digest, pieces = context.digest, context.pieces
        expected = _whole(log[:count], request)
        assert (snapshot.context_items, snapshot.context_fingerprint) == expected
        assert snapshot == to_snapshot(projection)
        assert (snapshot, digest) == snapshot_with_digest(projection, digest)


def test_the_workload_settles_and_extends_across_summaries() -> None:
    records = bench_session(400)
    projection = empty_projection(BENCH_SESSION, VIEW)
    digest: ContextDigest | None = None
    settled = 0
    for count, record in enumerate(records, start=1):
        projection = apply(projection, record)
        if count % 3:
            continue
        snapshot, digest = snapshot_with_digest(projection, digest)
        settled += digest is not None
        assert (snapshot.context_items, snapshot.context_fingerprint) == _whole(
            records[:count], VIEW
        )
    assert settled > 100  # of 133 snapshots


def test_an_extension_assembles_only_the_new_events(monkeypatch: pytest.MonkeyPatch) -> None:
    records = bench_session(60)
    projection = empty_projection(BENCH_SESSION, VIEW)
    digest = None
    for record in records[:15]:  # the last one is inv2's answer, e15
        projection = apply(projection, record)
    digest = digest_context(projection.view).digest
    assert digest is not None
    assembled: list[list[Event]] = []

    def spy(visible: Sequence[Event], request: ContentsRequest) -> list[Event]:
        assembled.append(list(visible))
        return paired_included(visible, request)

    monkeypatch.setattr(context_digest, "paired_included", spy)
    for record in records[15:20]:  # a state event (no content: not in the view), inv3's first four
        projection = apply(projection, record)
    context = digest_context(projection.view, digest)
    # Up to e18, the last event without calls or responses, then the tool traffic after it.
    assert [[event.id for event in events] for events in assembled] == [
        ["e17", "e18"],
        ["e19", "e20"],
    ]
    assert (context.items, context.fingerprint) == _whole(records[:20], VIEW)


def test_a_digest_of_other_events_is_not_used() -> None:
    records = bench_session(40)
    first = empty_projection(BENCH_SESSION, VIEW)
    for record in records[:15]:
        first = apply(first, record)
    stale = digest_context(first.view).digest
    assert stale is not None
    # Another session at the same offsets, whose model turns but the last are another
    # agent's replies: the last one's agent runs next and quotes them.
    events = [record.envelope.event for record in records[:15]]
    last = max(index for index, e in enumerate(events) if e.author == "agent")
    other = logged(
        [
            e.model_copy(update={"author": "helper"}) if e.author == "agent" and i < last else e
            for i, e in enumerate(events)
        ],
        [record.offset for record in records[:15]],
    )
    projection = empty_projection(SESSION, ContentsRequest(agent_name="agent"))
    for record in other:
        projection = apply(projection, record)
    changed = digest_context(projection.view, stale)
    assert (changed.items, changed.fingerprint) == _whole(
        other, ContentsRequest(agent_name="agent")
    )
    assert changed.fingerprint != digest_context(first.view).fingerprint


def _serialized(monkeypatch: pytest.MonkeyPatch) -> list[Content]:
    """Every content the digest serializes from now on."""
    serialized: list[Content] = []

    def spy(contents: Sequence[Content]) -> list[bytes]:
        serialized.extend(contents)
        return content_digests(contents)

    monkeypatch.setattr(context_digest, "content_digests", spy)
    return serialized


def test_a_summary_serializes_only_the_contents_not_met_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The workload's first summary changes the start of the context: the whole list is
    # assembled again, but only the summary's content (and any regrouped event's) is new.
    records = bench_session(400)
    summary_at = next(
        index for index, record in enumerate(records) if is_summary(record.envelope.event)
    )
    projection = empty_projection(BENCH_SESSION, VIEW)
    for record in records[:summary_at]:
        projection = apply(projection, record)
    before = digest_context(projection.view)
    projection = apply(projection, records[summary_at])
    serialized = _serialized(monkeypatch)
    context = digest_context(projection.view, before.digest, before.pieces)
    assert (context.items, context.fingerprint) == _whole(records[: summary_at + 1], VIEW)
    summary = records[summary_at].envelope.event
    assert summary.actions.compaction is not None
    assert summary.actions.compaction.compacted_content in serialized
    assert len(serialized) < context.items // 4


def test_a_content_digest_is_reused_for_the_very_event_only() -> None:
    records = bench_session(40)
    projection = empty_projection(BENCH_SESSION, VIEW)
    for record in records[:15]:
        projection = apply(projection, record)
    honest = digest_context(projection.view)
    # Each entry forged: the key of a real event, another (equal) object beside a wrong digest.
    forged = ContentPieces(
        honest.pieces.preserve_function_call_ids,
        {
            key: (event.model_copy(), b"\0" * 32)
            for key, (event, _) in honest.pieces.by_event.items()
        },
    )
    assert forged.by_event.keys() == honest.pieces.by_event.keys()
    again = digest_context(projection.view, None, forged)
    assert (again.items, again.fingerprint) == (honest.items, honest.fingerprint)
    # Digests made under the other call-id option are not used either.
    keep_ids = ContentsRequest(preserve_function_call_ids=True)
    other = empty_projection(BENCH_SESSION, keep_ids)
    for record in records[:15]:
        other = apply(other, record)
    wrong = ContentPieces(
        False,
        {key: (event, b"\0" * 32) for key, (event, _) in honest.pieces.by_event.items()},
    )
    assert digest_context(other.view, None, wrong).fingerprint == _whole(records[:15], keep_ids)[1]


@pytest.mark.core_property
@settings(deadline=None, max_examples=60)
@given(
    st.integers(40, 260),
    st.integers(0, 5),
    st.integers(2, 9),
    st.lists(st.integers(1, 7), min_size=1, max_size=40),
)
def test_snapshots_across_summaries_reuse_only_what_equals_a_whole_rebuild(
    events: int, seed: int, summary_every: int, strides: list[int]
) -> None:
    # Sessions that compact often, with tool calls and responses, snapshotted at irregular
    # points, so summaries land before, on and after the cuts a digest keeps.
    records = bench_session(events, seed=seed, summary_every=summary_every)
    projection = empty_projection(BENCH_SESSION, VIEW)
    digest: ContextDigest | None = None
    pieces: ContentPieces | None = None
    due = 0
    for count, record in enumerate(records, start=1):
        projection = apply(projection, record)
        if count < due and count < len(records):
            continue
        due = count + strides[count % len(strides)]
        snapshot, context = snapshot_carrying(projection, digest, pieces)
        digest, pieces = context.digest, context.pieces
        assert (snapshot.context_items, snapshot.context_fingerprint) == _whole(
            records[:count], VIEW
        )
