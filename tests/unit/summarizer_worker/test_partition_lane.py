"""A lane per request partition: its transactional id."""

from __future__ import annotations

from aiokafka import TopicPartition

from summarizer_worker.partition_lane import transactional_id


def test_a_request_partition_has_one_transactional_id_per_group() -> None:
    assert transactional_id("g", TopicPartition("p.compaction-requests", 3)) == (
        "g.p.compaction-requests.3"
    )
