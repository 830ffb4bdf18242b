"""What the front door raises on bad input: one clear message, never a traceback's worth."""

from __future__ import annotations

from schemas.errors import CtxstreamError


class InvalidEventError(CtxstreamError, ValueError):
    """An event or session key the pipeline would refuse; the message names the field."""
