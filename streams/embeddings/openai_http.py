"""An :class:`~streams.embeddings.embedder.Embedder` over an OpenAI-compatible endpoint (httpx).

``POST {base_url}/embeddings`` with ``{"model": ..., "input": [texts]}`` and, when a key
is set, ``Authorization: Bearer <key>``; the answer's ``data[i].embedding`` (ordered by
``data[i].index``) are the vectors. The key is never part of a URL, a message or a log
line; errors name the endpoint, the status and what was wrong.

Example::

    embedder = HttpEmbedder("http://127.0.0.1:8080/v1", "text-embedding-3-small", key)
    vectors = await embedder.embed(["Ingrid loves sushi"])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import httpx
from pydantic import SecretStr

from streams.embeddings.embedder import EmbeddingError

#: How long one request may take.
DEFAULT_TIMEOUT_S: Final = 30.0
#: The most texts sent in one request (OpenAI's endpoint takes up to 2,048 inputs).
MAX_BATCH: Final = 256


class HttpEmbedder:
    """Embeds texts with an OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        key: SecretStr | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """An embedder of `model` at `base_url` (``.../v1``), authenticated by `key` if any."""
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._key = key
        self._timeout_s = timeout_s
        self._transport = transport

    @property
    def url(self) -> str:
        """The endpoint texts are posted to."""
        return self._url

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, :data:`MAX_BATCH` texts a request.

        Raises:
            EmbeddingError: The endpoint could not be reached, answered an error status, or
                an answer without one finite vector of one length per text.
        """
        vectors: list[list[float]] = []
        headers = {"Authorization": f"Bearer {self._key.get_secret_value()}"} if self._key else {}
        async with httpx.AsyncClient(timeout=self._timeout_s, transport=self._transport) as client:
            for start in range(0, len(texts), MAX_BATCH):
                chunk = list(texts[start : start + MAX_BATCH])
                vectors.extend(await self._post(client, headers, chunk))
        if len({len(vector) for vector in vectors}) > 1:
            raise EmbeddingError(f"{self._url}: vectors of different lengths")
        return vectors

    async def _post(
        self, client: httpx.AsyncClient, headers: dict[str, str], texts: list[str]
    ) -> list[list[float]]:
        try:
            response = await client.post(
                self._url, json={"model": self._model, "input": texts}, headers=headers
            )
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{self._url}: unreachable ({type(exc).__name__})") from None
        if response.status_code != httpx.codes.OK:
            said = " ".join(response.text.split())[:200]
            raise EmbeddingError(f"{self._url}: status {response.status_code}: {said}")
        try:
            return _vectors(response.json(), len(texts))
        except ValueError as exc:
            raise EmbeddingError(f"{self._url}: {exc}") from None


def _vectors(answer: object, count: int) -> list[list[float]]:
    """The vectors of an answer to `count` inputs, by ``index``.

    Raises:
        ValueError: The answer is not ``{"data": [{"index", "embedding"}, ...]}`` with one
            finite vector per input.
    """
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected 'data' with {count} embeddings")
    by_index: dict[int, list[float]] = {}
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or index in by_index:
            raise ValueError(f"data[{position}].index is not a fresh index below {count}")
        if not isinstance(vector, list) or not vector:
            raise ValueError(f"data[{position}].embedding is not a list of numbers")
        numbers = [
            float(x) for x in vector if isinstance(x, int | float) and not isinstance(x, bool)
        ]
        if len(numbers) != len(vector) or not all(math.isfinite(x) for x in numbers):
            raise ValueError(f"data[{position}].embedding is not a list of finite numbers")
        by_index[index] = numbers
    return [by_index[index] for index in range(count)]
