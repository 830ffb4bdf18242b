"""The OpenAI-compatible embedder's answers checked, and its settings (no network, no key echoed).

Answers come from an httpx transport in the test; the local server that speaks the protocol
end to end is in tests/integration/ctxstream/test_memory_semantic.py.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import SecretStr, ValidationError

from streams.embeddings.embedder import EmbeddingError, unit
from streams.embeddings.openai_http import HttpEmbedder
from streams.embeddings.settings import EmbeddingSettings


def answering(body: Any, status: int = 200) -> tuple[HttpEmbedder, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, json=body)

    transport = httpx.MockTransport(handle)
    return HttpEmbedder("http://embed.test/v1/", "m1", SecretStr("k"), transport=transport), sent


async def test_vectors_come_back_in_input_order_by_index() -> None:
    embedder, sent = answering(
        {"data": [{"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [1.5, 0]}]}
    )
    assert await embedder.embed(["a", "b"]) == [[1.5, 0.0], [0.0, 2.0]]
    assert str(sent[0].url) == "http://embed.test/v1/embeddings"
    assert json.loads(sent[0].content) == {"model": "m1", "input": ["a", "b"]}
    assert sent[0].headers["authorization"] == "Bearer k"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"data": [{"index": 0, "embedding": [1.0]}]}, "expected 'data' with 2 embeddings"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]}, "fresh"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": "x"}]}, "list of"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [True]}]}, "finite"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}, "lengths"),
        ({"error": "no"}, "expected 'data'"),
    ],
)
async def test_an_unusable_answer_is_a_clear_error(body: Any, message: str) -> None:
    embedder, _ = answering(body)
    with pytest.raises(EmbeddingError, match=f"^http://embed.test/v1/embeddings: .*{message}"):
        await embedder.embed(["a", "b"])


async def test_an_error_status_names_the_endpoint_and_status() -> None:
    embedder, _ = answering({"error": {"message": "bad model"}}, status=400)
    with pytest.raises(EmbeddingError, match=r"embeddings: status 400: .*bad model"):
        await embedder.embed(["a"])


def test_unit_vectors_and_what_cannot_be_one() -> None:
    assert unit([3.0, 4.0]) == pytest.approx([0.6, 0.8])
    assert unit([0.0, 0.0]) == [0.0, 0.0]
    with pytest.raises(EmbeddingError, match="not a finite number"):
        unit([float("nan"), 1.0])


def test_settings_read_the_key_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert EmbeddingSettings().embedder() is None  # unset: offline
    monkeypatch.setenv("CTXSTREAM_MEMORY_EMBEDDINGS_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="MODEL"):
        EmbeddingSettings().embedder()
    monkeypatch.setenv("CTXSTREAM_MEMORY_EMBEDDINGS_MODEL", "m1")
    monkeypatch.setenv("CTXSTREAM_MEMORY_EMBEDDINGS_KEY_ENV", "MY_KEY")
    monkeypatch.setenv("MY_KEY", "s3cret")
    embedder = EmbeddingSettings().embedder()
    assert isinstance(embedder, HttpEmbedder)
    assert embedder.url == "http://127.0.0.1:9/v1/embeddings"
    assert "s3cret" not in repr(EmbeddingSettings())


def test_a_url_with_credentials_is_refused_without_echoing_them() -> None:
    with pytest.raises(ValidationError, match="carries credentials") as caught:
        EmbeddingSettings(url="https://user:s3cret@host/v1")
    assert "s3cret" not in str(caught.value)
