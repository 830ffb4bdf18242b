"""Request ids in summaries and refusals: empty ids are refused with the reason written out."""

from __future__ import annotations

import re

import pytest

from projections.summary_request import refusal_event, with_summary_request_id
from tests.support.events import summary_event

EMPTY_ID = "a compaction request id must not be empty"


def test_a_refusal_of_an_empty_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(EMPTY_ID)}$"):
        refusal_event("", "gave up", event_id="x", timestamp=1.0)


def test_a_summary_naming_an_empty_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(EMPTY_ID)}$"):
        with_summary_request_id(summary_event("s", 1.0, 2.0, 3.0), "")
