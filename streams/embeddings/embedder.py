"""The embedder protocol memory's semantic ranking uses, and what it returns. Pure.

An :class:`Embedder` turns texts into vectors, one per text, in order. Vectors are
stored and compared as unit vectors (:func:`unit`), so their cosine similarity is their
dot product. Design: ``ctxstream/memory/README.md``, "Semantic ranking".

Example: ``unit([3.0, 4.0])`` -> ``[0.6, 0.8]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from schemas.errors import CtxstreamError


class EmbeddingError(CtxstreamError):
    """The embeddings endpoint failed or answered something unusable; the message says which."""


class Embedder(Protocol):
    """Anything that embeds texts: one vector per text, in order, all of one length."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of `texts`.

        Raises:
            EmbeddingError: The texts could not be embedded.
        """
        ...


def unit(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to length 1 (a zero vector stays zero).

    Raises:
        EmbeddingError: A component is not a finite number.
    """
    if not all(math.isfinite(x) for x in vector):
        raise EmbeddingError("an embedding holds a component that is not a finite number")
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else [0.0 for _ in vector]
