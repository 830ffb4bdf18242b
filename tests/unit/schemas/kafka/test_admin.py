"""The broker's topic answers, read without a broker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from schemas.kafka.admin import described_partitions, refused_topics


def _topic(name: str, error_code: int, partitions: int) -> dict[str, Any]:
    return {
        "topic": name,
        "error_code": error_code,
        "is_internal": False,
        "partitions": [{"partition": p} for p in range(partitions)],
    }


@pytest.mark.parametrize(
    ("described", "expected"),
    [
        ([_topic("p.events", 0, 12)], 12),
        ([_topic("p.events", 0, 1)], 1),
        ([_topic("p.events", 3, 0)], 0),  # unknown topic or partition
        ([_topic("p.events", 5, 2)], 0),  # an error code counts nothing, whatever it lists
        ([], 0),
        ([_topic("p.projections", 0, 4)], 0),  # another topic's answer
        ([_topic("p.projections", 0, 4), _topic("p.events", 0, 6)], 6),
    ],
)
def test_the_partitions_described_are_those_of_the_topic_asked_without_error(
    described: list[dict[str, Any]], expected: int
) -> None:
    assert described_partitions(described, "p.events") == expected


@dataclass(frozen=True)
class _Response:
    topic_errors: list[tuple[Any, ...]]


def test_only_a_real_refusal_is_refused() -> None:
    response = _Response(
        [
            ("p.events", 0, None),
            ("p.projections", 36, "Topic 'p.projections' already exists."),
            ("p.dead-letters", 38, "Replication factor: 3 larger than available brokers: 1."),
            ("p.api-keys", 42),  # an old answer version: no message
        ]
    )
    assert refused_topics(response) == [
        ("p.dead-letters", 38, "Replication factor: 3 larger than available brokers: 1."),
        ("p.api-keys", 42, None),
    ]


def test_an_answer_without_errors_refuses_nothing() -> None:
    assert refused_topics(_Response([("p.events", 0, None)])) == []
    assert refused_topics(object()) == []
