"""Hand-made sessions and their compaction requests: now in :mod:`tests.support.events`."""

from __future__ import annotations

from tests.support.events import invocation, request_for, request_of_window, request_with, session

__all__ = ["invocation", "request_for", "request_of_window", "request_with", "session"]
