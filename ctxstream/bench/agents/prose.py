"""The agents workload's choices and texts, from a hash of a seed and a position. Pure.

No I/O, no clock, no randomness: :func:`pick` hashes its arguments, and
:func:`prose` cuts a text of the asked length out of one fixed corpus (built
once from a word list, in an order the hash gives), so texts vary from event
to event at the cost of a slice.
"""

from __future__ import annotations

import hashlib
from typing import Final

_VOCABULARY: Final = (
    "order shipment refund invoice customer account ticket warehouse delivery parcel "
    "search result source article summary report table figure study dataset method "
    "function module test patch branch commit build error trace config deploy "
    "weather forecast city morning evening rain sunny wind temperature week "
    "the a of to and in for with on from that this it is was will can should "
    "please thanks check found update status pending shipped delayed returned "
    "price total amount balance credit issue reason policy days hours minutes"
)
_WORDS: Final = _VOCABULARY.split()
_CORPUS_WORDS: Final = 4_000


def pick(seed: int, position: str, count: int) -> int:
    """A deterministic choice in ``range(count)`` for this seed and position.

    Example: ``pick(0, "s3/inv2/calls", 3)`` is the same number in every run.
    """
    digest = hashlib.blake2b(f"{seed}:{position}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def _corpus() -> str:
    words: list[str] = []
    block = 0
    while len(words) < _CORPUS_WORDS:
        digest = hashlib.blake2b(f"corpus:{block}".encode(), digest_size=64).digest()
        words.extend(_WORDS[byte % len(_WORDS)] for byte in digest)
        block += 1
    return " ".join(words)


_CORPUS: Final = _corpus()


def prose(seed: int, position: str, chars: int) -> str:
    """About `chars` characters of text (between 3/4 and 5/4 of it), for this position.

    Raises:
        ValueError: `chars` is not positive or longer than the corpus allows.
    """
    if not 0 < chars <= len(_CORPUS) // 4:
        raise ValueError(f"chars={chars}: need 0 < chars <= {len(_CORPUS) // 4}")
    length = chars * 3 // 4 + pick(seed, f"{position}/length", chars // 2 + 1)
    start = pick(seed, f"{position}/start", len(_CORPUS) - length)
    return _CORPUS[start : start + length].strip() or "ok"
