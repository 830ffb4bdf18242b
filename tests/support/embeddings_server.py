"""A local server speaking the OpenAI embeddings protocol, with vectors known by hand.

``POST /v1/embeddings`` answers deterministic vectors (:func:`vector_of`): a bag of
concepts (food, family, travel) plus hashed other words, so which texts are "near" each
other is known without the server. It records the ``Authorization`` headers and inputs,
and answers 503 while ``failing`` is set.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

KEY = "sekrit-key-123"
MODEL = "concepts-1"
CONCEPTS = {
    "food": 0,
    "sushi": 0,
    "olives": 0,
    "eat": 0,
    "sister": 1,
    "mum": 1,
    "ingrid": 1,
    "flight": 2,
    "airport": 2,
    "terminal": 2,
}
DIMENSIONS = 8


def vector_of(text: str) -> list[float]:
    """The server's vector of `text`: concept counts, other words hashed into dims 3..7."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in CONCEPTS:
            vector[CONCEPTS[word]] += 3.0
        else:
            digest = hashlib.sha256(word.encode()).digest()
            vector[3 + digest[0] % (DIMENSIONS - 3)] += 0.2
    return vector


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.hypot(*a) * math.hypot(*b))


@dataclass
class Server:
    """The local endpoint: its base URL, what it was sent, whether it fails."""

    base_url: str = ""
    authorizations: list[str | None] = field(default_factory=list)
    inputs: list[list[str]] = field(default_factory=list)
    failing: bool = False


@asynccontextmanager
async def embeddings_server() -> AsyncIterator[Server]:
    """The server on a free local port, until the block ends."""
    state = Server()

    async def embeddings(request: web.Request) -> web.Response:
        state.authorizations.append(request.headers.get("Authorization"))
        if state.failing:
            return web.Response(status=503, text="overloaded, try later")
        body = await request.json()
        state.inputs.append(body["input"])
        if body.get("model") != MODEL:
            return web.Response(status=404, text="no such model")
        data = [
            {"object": "embedding", "index": i, "embedding": vector_of(text)}
            for i, text in enumerate(body["input"])
        ]
        return web.json_response({"object": "list", "data": data, "model": body["model"]})

    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    state.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield state
    finally:
        await runner.cleanup()
