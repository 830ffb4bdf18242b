"""Records that break the event contract go to dead-letters with their reason, source and
bytes; the records after them are applied."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas.codec import MAX_RECORD_BYTES, decode_dead_letter, encode
from schemas.keys import SessionKey
from tests.conftest import unique_topic
from tests.support.events import session_key
from tests.support.kafka import (
    ENGINES,
    append,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_all,
    read_log,
    running_projector,
    scripted_sessions,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 90.0


def _bad_records() -> list[tuple[bytes | None, bytes | None, str]]:
    """(key, value, a phrase the reason must contain) of each kind of bad record."""
    good = scripted_sessions(2, 1)
    first, other = good[0], good[-1]  # sessions 0 and 1
    as_dict = orjson.loads(encode(first))
    key = first.session_key.encode()
    oversized = orjson.dumps({**as_dict, "producer_id": "x" * 256, "pad": "y" * MAX_RECORD_BYTES})
    return [
        (key, b"{not json", "not JSON"),
        (key, None, "no value"),  # a tombstone
        (None, encode(first), "no key"),
        (b"not-a-session-key", encode(first), "differs from the envelope"),
        (b"\xff\xfe", encode(first), "not UTF-8"),
        (key, oversized, "exceeds the limit"),
        (key, orjson.dumps({**as_dict, "schema_version": 99}), "unknown schema_version 99"),
        (key, encode(other), "differs from the envelope"),  # session 1's event under 0's key
        (key, orjson.dumps({**as_dict, "event": {"author": 3}}), "invalid envelope"),
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_bad_records_are_dead_lettered_and_the_rest_applied(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=1,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    before = scripted_sessions(2, 2)
    after = scripted_sessions(2, 2, first_invocation=3)
    bad = _bad_records()
    records: list[tuple[bytes | None, bytes | None]] = [
        (e.session_key.encode(), encode(e)) for e in before
    ]
    records += [(key, value) for key, value, _ in bad]
    records += [(e.session_key.encode(), encode(e)) for e in after]
    await append(kafka_bootstrap, events, records)

    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        folded = clean_fold(settings, await read_log(kafka_bootstrap, events))

        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)

    letters = [
        decode_dead_letter(r.value)
        for r in await read_all(kafka_bootstrap, settings.topic("dead-letters"))
    ]
    bad_offsets = range(len(before), len(before) + len(bad))
    assert sorted(letter.source_offset for letter in letters) == list(bad_offsets)
    for letter in letters:
        key, value, phrase = bad[letter.source_offset - len(before)]
        assert letter.source_topic == events
        assert letter.source_partition == 0
        assert letter.original_key == key
        value = value or b""  # a tombstone's letter holds no bytes
        assert letter.original_size == len(value)
        assert letter.stage == "decode"
        if len(value) > MAX_RECORD_BYTES:  # the oversized record: a prefix, and said so
            assert letter.truncated
            assert 0 < len(letter.original_value) < len(value)
            assert letter.original_value == value[: len(letter.original_value)]
        else:
            assert not letter.truncated
            assert letter.original_value == value
        assert phrase in letter.reason, letter.reason
    # the good records after the bad ones were applied
    last_good = len(records) - 1
    assert max(s.last_offset for s in expected_snapshots(folded).values()) == last_good
    assert set(folded) == {session_key(0), session_key(1)}
    assert all(isinstance(key, str) for key in folded)
    assert folded[SessionKey(session_key(0))][0].invocations.total == 4
