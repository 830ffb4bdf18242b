"""What ``ctxstream bench compaction`` sees of the pipeline: each request's path, point by point.

A follower of the deployment's topics (``read_committed``,
:mod:`ctxstream.topic_follower`) notes, for every first-attempt compaction
request, which event decided it and the points of its path
(:mod:`ctxstream.bench.compaction_hops`) that its records show: the
request, the first committed summary naming it and the first snapshot
showing that summary as the session's compaction boundary, each with the
workers' timing stamps (:mod:`schemas.kafka.timing`), its own timestamp
(when its worker sent it) and when the follower saw it. Times are wall-clock
seconds: the workers run on this machine, on the same clock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aiokafka import ConsumerRecord

from ctxstream.topic_follower import follow
from projections.event_kinds import summary_request_id
from schemas.codec import decode_compaction_request, decode_envelope, decode_projection_snapshot
from schemas.errors import DecodeError
from schemas.kafka.settings import KafkaSettings, TopicRole
from schemas.kafka.timing import BUILT, READ, TAKEN, stamped
from schemas.keys import SessionKey

#: The background load's sessions (tenants ``background*``): their events
#: are skipped unread, so that following them costs the benchmark nothing.
BACKGROUND_KEYS: Final = b"background"
#: The follower's fetch wait and poll. A fetch is answered as soon as a
#: transaction's commit makes records readable, so neither delays what it sees.
FETCH_MAX_WAIT_MS: Final = 20
POLL_MS: Final = 100


@dataclass(slots=True)
class Observed:
    """What the follower has seen so far.

    Attributes:
        decided: Request id -> its session and the offset of the event that
            decided it (first attempts only).
        points: Request id -> its points seen so far (point -> seconds).
        applied_keys: Sessions a snapshot showed a summary applied in.
    """

    decided: dict[str, tuple[SessionKey, int]] = field(default_factory=dict)
    points: dict[str, dict[str, float]] = field(default_factory=dict)
    applied_keys: set[SessionKey] = field(default_factory=set)

    def applied(self, request_id: str) -> bool:
        """Whether a snapshot showed the request's summary applied."""
        return "snapshot_seen" in self.points.get(request_id, {})

    def note_points(
        self, request_id: str, record: ConsumerRecord[Any, Any], stage: str, now: float
    ) -> None:
        """Note `stage`'s points of `record` for the request, unless noted already.

        ``<stage>_taken`` (and the summary's ``_read`` and ``_built``) from its
        stamps, ``<stage>_sent`` from its timestamp, ``<stage>_seen`` `now`.
        """
        points = self.points.setdefault(request_id, {})
        if f"{stage}_seen" in points:
            return
        headers: Sequence[tuple[str, bytes]] = record.headers or ()
        for name, header in (("taken", TAKEN), ("read", READ), ("built", BUILT)):
            at = stamped(headers, header)
            if at is not None:
                points[f"{stage}_{name}"] = at
        if record.timestamp is not None and record.timestamp >= 0:
            points[f"{stage}_sent"] = record.timestamp / 1000
        points[f"{stage}_seen"] = now


async def observe(settings: KafkaSettings, observed: Observed) -> None:
    """Follow requests, summaries and snapshots into `observed` until cancelled."""
    roles: list[TopicRole] = ["compaction-requests", "projections", "events"]
    async for batches in follow(
        settings, roles, fetch_max_wait_ms=FETCH_MAX_WAIT_MS, poll_ms=POLL_MS
    ):
        now = time.time()
        for tp, records in batches.items():
            for record in records:
                _note(observed, tp.topic, record, now, settings)


def _note(
    observed: Observed,
    topic: str,
    record: ConsumerRecord[Any, Any],
    now: float,
    settings: KafkaSettings,
) -> None:
    value: bytes = record.value or b""
    try:
        if topic == settings.topic("compaction-requests"):
            request = decode_compaction_request(value)
            if request.attempt == 1 and request.request_id not in observed.decided:
                observed.decided[request.request_id] = (
                    request.session_key,
                    request.decided_at_offset,
                )
                observed.note_points(request.request_id, record, "request", now)
        elif topic == settings.topic("events"):
            if (record.key or b"").startswith(BACKGROUND_KEYS):
                return
            request_id = summary_request_id(decode_envelope(value).event)
            if request_id is not None:
                observed.note_points(request_id, record, "summary", now)
        else:
            snapshot = decode_projection_snapshot(value)
            boundary = snapshot.boundary
            if boundary is not None and boundary.request_id is not None:
                observed.note_points(boundary.request_id, record, "snapshot", now)
                observed.applied_keys.add(snapshot.session_key)
    except DecodeError:
        return
