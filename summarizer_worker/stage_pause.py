"""Fault injection for tests: pause at a named stage so that a kill lands there.

Off unless ``CTXSTREAM_SUMMARIZER_STAGE_DELAY_S`` names a stage (JSON, e.g.
``{"render": 0.1, "transaction": 0.2}``). A pause logs
``stage reached stage=<name> request=<id>`` at INFO before it sleeps, which is
what a test waits for before it sends ``kill -9``: the kill then lands after
the window is built (``render``), before the summarizer's result is used
(``summarize``) or inside the open transaction, after the summary was sent
and before the commit (``transaction``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from schemas.log_text import shown
from summarizer_worker.settings import PausePoint

logger = logging.getLogger(__name__)


class StagePause:
    """Sleeps for the configured time at each named stage; a no-op when none is set."""

    def __init__(self, delays_s: Mapping[PausePoint, float]) -> None:
        """Pauses of `delays_s` seconds per stage; stages not named are not paused."""
        self._delays_s = dict(delays_s)

    async def __call__(self, stage: PausePoint, request_id: str) -> None:
        """Pause at `stage` while handling `request_id`, if a pause is configured there."""
        delay_s = self._delays_s.get(stage)
        if not delay_s:
            return
        logger.info(
            "stage reached stage=%s request=%s delay_s=%.3f", stage, shown(request_id), delay_s
        )
        await asyncio.sleep(delay_s)
