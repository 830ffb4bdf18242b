"""Both exactly-once writers name a partition's producer by one rule."""

from __future__ import annotations

from schemas.kafka.transaction import transactional_id


def test_each_consumed_partition_has_a_transactional_id_of_its_own() -> None:
    assert [transactional_id("acme-projector", "prod.events", p) for p in (0, 1, 11)] == [
        "acme-projector-prod.events-0",
        "acme-projector-prod.events-1",
        "acme-projector-prod.events-11",
    ]
    assert transactional_id("g", "p.compaction-requests", 3) == "g-p.compaction-requests-3"
