"""What the projection remembers of the request it waits on: every field of the request's."""

from __future__ import annotations

from projections.compaction.in_flight import InFlightRequest
from schemas.compaction_request import CompactionRequest
from schemas.keys import Offset
from tests.support.events import SESSION, TENANT


def test_the_in_flight_record_copies_the_requests_fields() -> None:
    request = CompactionRequest(
        request_id="req-7",
        tenant=TENANT,
        session_key=SESSION,
        trigger="token_threshold",
        event_offsets=(Offset(10), Offset(20), Offset(30)),
        event_ids=("e10", "e20", "e30"),
        start_timestamp=100.0,
        end_timestamp=103.0,
        decided_at_offset=Offset(42),
        attempt=3,
    )
    assert InFlightRequest.of(request) == InFlightRequest(
        request_id="req-7",
        trigger="token_threshold",
        start_offset=Offset(10),
        end_offset=Offset(30),
        decided_at_offset=Offset(42),
        attempt=3,
    )
