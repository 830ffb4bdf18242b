"""Whether a decoded compaction request can be answered at all. Pure: no I/O, no clock.

The codec checks a request's shape; this checks what the worker's answer
needs, before anything is read or any summarizer is called (review H4): the
answer is written into the request's session, so the request's tenant must
own that session; its id becomes part of the answer's idempotency key
(``summary:<id>``, ``refused:<id>``); its offsets are sought to; its
timestamps become the summary's range, which JSON can carry only if finite.
A request that fails here is dead-lettered and nothing is written into the
session it names.
"""

from __future__ import annotations

import math
import re
from typing import Final

from schemas.compaction_request import CompactionRequest
from schemas.errors import InvalidSessionKeyError
from schemas.keys import parse_session_key
from schemas.log_text import shown

#: The ids a request may carry. The projector writes 32 hex digits
#: (`compaction_request_id`); anything longer is not ours, and ids end up in
#: idempotency keys (256 characters at most) and in log lines.
MAX_REQUEST_ID_CHARS: Final = 64
REQUEST_ID: Final = re.compile(rf"[A-Za-z0-9._:-]{{1,{MAX_REQUEST_ID_CHARS}}}")
#: Characters of an offending value quoted in a problem.
SHOWN_CHARS: Final = 80


def request_problem(request: CompactionRequest) -> str | None:
    """What makes `request` unanswerable, or None when it can be answered.

    Example: tenant ``"evil"`` with session ``"acme/app/u/s"`` -> ``"tenant
    'evil' does not own session 'acme/app/u/s'"``; a 300-character id -> a
    problem naming the id's length; offsets ``(-1,)`` -> a problem naming the
    offset.
    """
    try:
        owner = parse_session_key(request.session_key).tenant
    except InvalidSessionKeyError as exc:
        return f"session key '{shown(request.session_key, SHOWN_CHARS)}' is invalid: {exc}"
    if owner != request.tenant:
        return (
            f"tenant '{shown(request.tenant, SHOWN_CHARS)}' does not own session "
            f"'{shown(request.session_key, SHOWN_CHARS)}'"
        )
    if REQUEST_ID.fullmatch(request.request_id) is None:
        return (
            f"request id '{shown(request.request_id, SHOWN_CHARS)}' "
            f"({len(request.request_id)} characters) is not 1 to {MAX_REQUEST_ID_CHARS} "
            "of [A-Za-z0-9._:-]"
        )
    named = {event.offset for event in request.inherited}  # a fork's inherited events
    negative = [offset for offset in request.event_offsets if offset < 0 and offset not in named]
    if negative or request.decided_at_offset < 0:
        first = negative[0] if negative else request.decided_at_offset
        return f"offset {first} is negative"
    timestamps = [request.start_timestamp, request.end_timestamp]
    if request.seed is not None:
        timestamps.append(request.seed.timestamp)
    if not all(math.isfinite(timestamp) for timestamp in timestamps):
        return f"a timestamp is not finite: {timestamps}"
    return None
