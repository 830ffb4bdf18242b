"""Builders of hand-written events: now in :mod:`tests.support.events`."""

from __future__ import annotations

from tests.support.events import (
    bare_event,
    call_event,
    ids,
    response_event,
    rewind_event,
    summary_event,
    text_event,
)

__all__ = [
    "bare_event",
    "call_event",
    "ids",
    "response_event",
    "rewind_event",
    "summary_event",
    "text_event",
]
