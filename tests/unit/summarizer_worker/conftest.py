"""The local OpenAI-compatible server, one per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.chat_server import ChatServer


@pytest.fixture
async def chat_server() -> AsyncIterator[ChatServer]:
    """A started `ChatServer` on 127.0.0.1, closed after the test."""
    server = ChatServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()
