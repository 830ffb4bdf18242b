"""The partition of a topic a session's records go to: Kafka's default partitioner. Pure.

Every Kafka client (aiokafka, faust, the Java client) puts a keyed record in
partition ``(murmur2(key) & 0x7fffffff) % partitions``. The projector checks
each `events` record against it, the summarizer reads a session's records from
it, and both engines route by it; this is its one definition.
"""

from __future__ import annotations

from aiokafka.partitioner import murmur2


def session_partition(key: bytes, partitions: int) -> int:
    """The partition among `partitions` a record keyed `key` goes to.

    Raises:
        ValueError: `partitions` is not positive.
    """
    if partitions < 1:
        raise ValueError(f"partitions={partitions!r}: a topic has at least one")
    return int(murmur2(key) & 0x7FFFFFFF) % partitions
