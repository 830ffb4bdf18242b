"""The sessions over their size cap, learnt from `dead-letters`, so their appends are refused.

The projector refuses a record that would take its session over
``SESSION_MAX_BYTES`` and dead-letters it at stage ``session-size``, keyed in
the letter by the session (``original_key``). Without a check at the door,
every later append of that session would become one more letter, kept
forever. :class:`OversizedSessions` follows the deployment's `dead-letters`
topic from its beginning (committed records only, one reader for the
server, :func:`ctxstream.topic_follower.follow`) and keeps the keys of the
sessions such letters name: at most ``HTTP_MAX_OVERSIZED_SESSIONS``, the
newest. The HTTP API answers an append to one of them 409.

It fails open: while the reader catches up after a start, or if it stopped
(logged), appends go on to the projector, which still refuses them there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Final, Self

from pydantic import ValidationError

from ctxstream.errors import SessionOverSizeCapError
from ctxstream.topic_follower import follow
from schemas.dead_letter import MAX_KEY_BYTES, DeadLetter
from schemas.kafka.settings import KafkaSettings
from schemas.log_text import shown

logger = logging.getLogger(__name__)

#: The dead-letter stage of a record refused for its session's size.
SESSION_SIZE_STAGE: Final = "session-size"
#: How the stage appears in an encoded letter: most letters are skipped without being parsed.
_STAGE_MARK: Final = f'"stage":"{SESSION_SIZE_STAGE}"'.encode()
_FETCH_WAIT_MS: Final = 500
_POLL_MS: Final = 500


class OversizedSessions:
    """Keys of sessions the projector refuses records of, read from `dead-letters`."""

    def __init__(self, settings: KafkaSettings, *, max_sessions: int) -> None:
        """The sessions of the deployment `settings` name; nothing connects yet."""
        self._settings = settings
        self._events_topic = settings.topic("events")
        self._max_sessions = max_sessions
        self._keys: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, session_key: str) -> bool:
        """Whether `session_key` is over its cap, as far as the letters read so far say."""
        return session_key in self._keys

    def check(self, session_key: str) -> None:
        """Refuse an append to `session_key` when it is over its cap.

        Raises:
            SessionOverSizeCapError: A ``session-size`` letter names the session.
        """
        if session_key in self._keys:
            raise SessionOverSizeCapError(session_key)

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[Self]:
        """Read `dead-letters` in the background, from its beginning, while the block runs."""
        reader = asyncio.create_task(self._follow(), name="dead-letters-follower")
        try:
            yield self
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    def note(self, value: bytes | None) -> None:
        """Take one letter in: remember its session when it was refused for its size."""
        if value is None or _STAGE_MARK not in value:
            return
        try:
            letter = DeadLetter.model_validate_json(value)
        except ValidationError:
            return  # not a letter of this schema: another writer's
        if letter.stage != SESSION_SIZE_STAGE or letter.source_topic != self._events_topic:
            return
        if letter.original_key is None or len(letter.original_key) >= MAX_KEY_BYTES:
            return  # a cut key names no session
        key = letter.original_key.decode(errors="replace")
        if key not in self._keys:
            logger.info("session over its size cap: appends refused session=%s", shown(key))
        self._keys[key] = None
        self._keys.move_to_end(key)
        while len(self._keys) > self._max_sessions:
            self._keys.popitem(last=False)

    async def _follow(self) -> None:
        try:
            async for fetched in follow(
                self._settings, ["dead-letters"], fetch_max_wait_ms=_FETCH_WAIT_MS, poll_ms=_POLL_MS
            ):
                for records in fetched.values():
                    for record in records:
                        self.note(record.value)
                await asyncio.sleep(0)  # a long backlog never holds the loop for more than a fetch
        except Exception:
            # Fail open: the projector still refuses the records; only the door check is gone.
            logger.exception("dead letters no longer followed: oversized sessions not refused")
