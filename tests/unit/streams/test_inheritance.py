"""A fork's inheritance folds every inherited record, counts their bytes and digests the context."""

from __future__ import annotations

from functools import reduce

import pytest

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.contents.context_digest import digest_context
from projections.fold.fork import inherited
from projections.fold.projection import SessionProjection, apply, inheriting
from schemas.codec import encode
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.batch import inherit
from streams.projector_settings import ProjectorSettings

SETTINGS = ProjectorSettings(compaction={"compaction_interval": 4, "overlap_size": 1})
FORK = SessionKey(BENCH_SESSION.rsplit("/", 1)[0] + "/forked")


def _line(at: int) -> list[LoggedEvent]:
    """What a fork of the source at `at` folds: the source's records up to it, inherited."""
    return inherited(record for record in bench_session(200) if record.offset <= at)


def _folded_by_hand(records: list[LoggedEvent]) -> SessionProjection:
    start = inheriting(SETTINGS.empty_projection_for(FORK))
    return reduce(apply, records, start)


@pytest.mark.parametrize("at", [0, 37, 150])
def test_every_inherited_record_is_folded_once_and_counted_in_bytes(at: int) -> None:
    line = _line(at)
    calls: list[None] = []

    inheritance = inherit(SETTINGS, FORK, line, between=lambda: calls.append(None))

    expected = _folded_by_hand(line)
    assert inheritance.projection == expected
    assert inheritance.size == sum(len(encode(record.envelope)) for record in line)
    assert inheritance.digest == digest_context(inheritance.projection.view).digest
    assert inheritance.digest == digest_context(expected.view).digest
    assert len(calls) == len(line)
