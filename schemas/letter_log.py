"""Dead letters logged once per session and stage, the rest counted.

A session past its size cap turns every later append into a dead letter. Each
letter still goes to `dead-letters`, but a WARNING line for each would let one
tenant fill the worker's log: :class:`LetterLog` logs the first letter of a
(session key, stage) with its reason, counts the later ones, and logs their
count once per interval (``N more dead letters session=... stage=...``). It
remembers a bounded number of (session key, stage) pairs, least recently
lettered first out; a pair that leaves with letters still counted has its
count logged then.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from schemas.dead_letter import DeadLetter
from schemas.log_text import shown

#: (session key, stage) pairs remembered; each holds its key's first bytes and two numbers.
MAX_PAIRS: Final = 4096
#: Seconds between two count lines of one pair (and between two sweeps of every pair).
SUMMARY_INTERVAL_S: Final = 60.0
_KEY_BYTES: Final = 512  # what a pair keeps of a session key (keys are far shorter)


@dataclass(slots=True)
class _Pair:
    counted: int  # letters since the last line about this pair
    since: float  # when that line was logged


class LetterLog:
    """Log the first dead letter of each (session key, stage); count and summarise the rest."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        max_pairs: int = MAX_PAIRS,
        interval_s: float = SUMMARY_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._max_pairs = max_pairs
        self._interval_s = interval_s
        self._clock = clock
        self._pairs: OrderedDict[tuple[bytes, str], _Pair] = OrderedDict()
        self._next_sweep = clock() + interval_s

    def __len__(self) -> int:
        """How many (session key, stage) pairs are remembered."""
        return len(self._pairs)

    def letter(self, letter: DeadLetter) -> None:
        """Log `letter` if it is its pair's first, else count it (and log the count when due)."""
        now = self._clock()
        pair_id = ((letter.original_key or b"")[:_KEY_BYTES], letter.stage)
        pair = self._pairs.get(pair_id)
        if pair is None:
            self._logger.warning(
                "dead letter topic=%s partition=%d offset=%d stage=%s reason=%s",
                shown(letter.source_topic),
                letter.source_partition,
                letter.source_offset,
                letter.stage,
                shown(letter.reason),
            )
            self._pairs[pair_id] = _Pair(0, now)
            while len(self._pairs) > self._max_pairs:
                old_id, old = self._pairs.popitem(last=False)
                self._summarise(old_id, old, now)
        else:
            pair.counted += 1
            self._pairs.move_to_end(pair_id)
            if now - pair.since >= self._interval_s:
                self._summarise(pair_id, pair, now)
        self.sweep()

    def sweep(self) -> None:
        """Log the counts of every pair whose last line is an interval old.

        It looks at the pairs at most once per interval (one comparison
        otherwise), so letters that stopped coming are still reported.
        """
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._interval_s
        for pair_id, pair in self._pairs.items():
            if now - pair.since >= self._interval_s:
                self._summarise(pair_id, pair, now)

    def _summarise(self, pair_id: tuple[bytes, str], pair: _Pair, now: float) -> None:
        if pair.counted:
            self._logger.warning(
                "%d more dead letters session=%s stage=%s in the last %.0f s",
                pair.counted,
                _session(pair_id[0]),
                pair_id[1],
                now - pair.since,
            )
        pair.counted, pair.since = 0, now


def _session(key: bytes) -> str:
    return shown(key.decode("utf-8", errors="replace")) if key else "-"
