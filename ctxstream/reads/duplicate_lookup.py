"""The append door's duplicate lookup: which events the session's owner has stored, equal.

One ``stored-events`` request to the partition's owner as the claims name it,
no retry, within the lookup's time; every failure (no owner known, none
answering, a refusal) answers ``{}``, so an append never depends on a
projector. Nor does it wait for the claims: they are read in the background
at the first lookup, and again :data:`LOOKUP_REFRESH_S` after a lookup that
found no owner to ask; lookups go without meanwhile (only the first read of
the claims is waited for, so a client that appends once still asks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Final

import orjson
from pydantic import ValidationError

from ctxstream.reads.arguments import checked_key
from ctxstream.reads.routing import ReadRouter, worker_wait
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from schemas.log_text import shown
from schemas.read_protocol import (
    MAX_STORED_EVENTS_ASKED,
    ProjectionQuery,
    StoredEvents,
    StoredEventsAsk,
)

logger = logging.getLogger(__name__)

#: How often duplicate lookups read the claims again, at most, after one found no owner to ask
#: (they are skipped meanwhile).
LOOKUP_REFRESH_S: Final = 5.0
#: The longest a background read of the claims for duplicate lookups may take.
CLAIMS_READ_S: Final = 10.0


class DuplicateLookup:
    """Duplicate lookups on a router's claims, with their background read of the claims."""

    def __init__(self, router: ReadRouter) -> None:
        """Lookups routed by `router`; nothing is read yet."""
        self._router = router
        self._claims_read: asyncio.Task[None] | None = None
        self._claims_read_at: float | None = None
        self._stale = False

    async def close(self) -> None:
        """Cancel a background read of the claims still running."""
        reading, self._claims_read = self._claims_read, None
        if reading is not None and not reading.done():
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading

    async def stored_offsets(
        self, session_key: str, digests: Mapping[str, str], *, timeout_s: float
    ) -> dict[str, int]:
        """Of the events `digests` names (id -> digest), those the session stored equal, and where.

        Raises:
            InvalidArgumentError: The key is refused (nothing was sent).
        """
        key = checked_key(session_key)
        deadline = time.monotonic() + timeout_s
        stored: dict[str, int] = {}
        asked = dict(digests)
        ids = list(asked)
        for start in range(0, len(ids), MAX_STORED_EVENTS_ASKED):
            part = {event_id: asked[event_id] for event_id in ids[start:][:MAX_STORED_EVENTS_ASKED]}
            answer = await self._stored_part(key, part, deadline)
            if answer is None:
                break
            stored.update((i, o) for i, o in answer.stored.items() if i in part)
        return stored

    async def _stored_part(
        self, key: SessionKey, digests: dict[str, str], deadline: float
    ) -> StoredEvents | None:
        """One ``stored-events`` read of the owner; None when it was not answered."""
        if self._claims_unread() and not await self._first_claims_read(deadline):
            return None  # being read, in the background: no append waits for the claims
        owners = self._router.owners
        count = owners.events_partitions
        claim = None if count is None else owners.owner(session_partition(key.encode(), count))
        remaining = deadline - time.monotonic()
        if claim is None or remaining <= 0:
            self._stale = True
            return None
        query = ProjectionQuery(timeout_s=worker_wait(remaining))
        body = orjson.dumps(StoredEventsAsk(digests=digests).model_dump())
        answer = await self._router.ask(
            claim.address, key, "stored-events", query, remaining, body=body
        )
        if not isinstance(answer, bytes):
            self._stale = True  # a stopped owner, or one that lost the partition
            logger.info("duplicate lookup not answered session=%s", shown(key))
            return None
        try:
            found = StoredEvents.model_validate_json(answer)
        except ValidationError:
            logger.warning("duplicate lookup answer refused session=%s", shown(key))
            return None
        return found if found.session_key == key else None

    async def _first_claims_read(self, deadline: float) -> bool:
        """Whether the client's first read of the claims ended, waited for until `deadline`.

        Only the first: a client that appends once (a command, a script) would
        otherwise never ask, while later refreshes run beside the appends.
        """
        reading = self._claims_read
        remaining = deadline - time.monotonic()
        if self._router.directory_read or reading is None or remaining <= 0:
            return False
        done, _ = await asyncio.wait({reading}, timeout=remaining)
        return bool(done) and not reading.cancelled() and reading.exception() is None

    def _claims_unread(self) -> bool:
        """Whether a duplicate lookup goes without the claims: unread yet, or paused.

        Starts reading them in the background at the first lookup, and again
        :data:`LOOKUP_REFRESH_S` after a read that named no owner (or named one
        that did not answer); lookups go without meanwhile.
        """
        reading = self._claims_read
        if reading is not None and not reading.done():
            return True
        tried = self._claims_read_at
        if tried is not None and not self._stale:
            return False
        if tried is not None and time.monotonic() - tried < LOOKUP_REFRESH_S:
            return True
        self._claims_read_at, self._stale = time.monotonic(), False
        deadline = time.monotonic() + CLAIMS_READ_S
        self._claims_read = asyncio.create_task(self._router.refresh(deadline))
        return True
