"""Where a session's records are: the partition its key hashes to, as the producer chose."""

from __future__ import annotations

from typing import Final

import pytest

from schemas.kafka.partitioning import session_partition

#: Kafka's published murmur2 values (its client's own unit tests, as signed 32-bit ints):
#: every Kafka client puts a key in partition ``(murmur2(key) & 0x7fffffff) % partitions``.
KAFKA_MURMUR2: Final = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("partitions", [1, 3, 12, 100])
def test_a_session_goes_to_the_partition_every_kafka_client_picks(partitions: int) -> None:
    for key, murmur2 in KAFKA_MURMUR2.items():
        assert session_partition(key, partitions) == (murmur2 & 0x7FFFFFFF) % partitions


def test_sessions_spread_over_every_partition_and_a_topic_has_one_at_least() -> None:
    keys = [f"t/a/u/s{n}".encode() for n in range(200)]
    assert {session_partition(key, 12) for key in keys} == set(range(12))
    with pytest.raises(ValueError, match="at least one"):
        session_partition(b"k", 0)
