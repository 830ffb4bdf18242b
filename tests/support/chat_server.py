"""A local HTTP server that speaks OpenAI's chat-completions protocol, scriptably.

It listens on 127.0.0.1 on a port the kernel picks, records every request it
gets, and answers each with the next scripted `Reply`; with none left it
answers with a completion derived from the prompt (`echo_summary`), so a
backend talking to it is deterministic.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

CHAT_PATH: Final = "/v1/chat/completions"
#: Longest `echo_summary`: what the contract test holds this backend to.
ECHO_MAX_CHARS: Final = 200
#: Bound on server shutdown; a scripted delay is cut short when the server closes.
SHUTDOWN_TIMEOUT_S: Final = 5.0


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON object, or raw text for a broken body."""

    status: int = 200
    body: Mapping[str, Any] | str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any


def completion(content: str | None, usage: Mapping[str, int] | None = None) -> dict[str, Any]:
    """A chat-completion reply body with one choice."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return body


def echo_summary(prompt: str) -> str:
    """A bounded digest of `prompt`: its size, a hash and its last line, clipped."""
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:16]
    last = prompt.rsplit("\n", 1)[-1]
    return f"summary {digest} of {len(prompt)} chars; last: {last}"[:ECHO_MAX_CHARS]


def echo_reply(prompt: str) -> Reply:
    """The default answer: `echo_summary` with token counts of a quarter of the characters."""
    text = echo_summary(prompt)
    usage = {
        "prompt_tokens": len(prompt) // 4,
        "completion_tokens": len(text) // 4,
        "total_tokens": len(prompt) // 4 + len(text) // 4,
    }
    return Reply(body=completion(text, usage))


class ChatServer:
    """The server; `start` it, `script` replies, read `received`, then `close` it."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self._replies: deque[Reply] = deque()
        self._replies_for: dict[str, deque[Reply]] = {}
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        self.base_url = ""

    async def start(self) -> None:
        """Listen on 127.0.0.1, on a free port; `base_url` is then set."""
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"

    async def close(self) -> None:
        """Cut any scripted delay short and stop listening."""
        self._closing.set()
        await self._runner.cleanup()

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with `replies`, in order."""
        self._replies.extend(replies)

    def script_for(self, marker: str, *replies: Reply) -> None:
        """Answer the next requests whose prompt contains `marker` with `replies`, in order.

        These come before the general script, for the requests they match.
        """
        self._replies_for.setdefault(marker, deque()).extend(replies)

    def _next_reply(self, prompt: str) -> Reply:
        for marker, replies in self._replies_for.items():
            if replies and marker in prompt:
                return replies.popleft()
        return self._replies.popleft() if self._replies else echo_reply(prompt)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = await request.json() if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.received.append(Received(request.method, request.path, dict(request.headers), body))
        if request.method != "POST" or request.path != CHAT_PATH:
            return web.json_response({"error": {"message": "no such route"}}, status=404)
        reply = self._next_reply(_prompt(body))
        if reply.delay_s:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), reply.delay_s)
        if isinstance(reply.body, str):
            return web.Response(status=reply.status, text=reply.body, headers=reply.headers)
        return web.json_response(dict(reply.body), status=reply.status, headers=reply.headers)


def _prompt(body: Any) -> str:
    try:
        return str(body["messages"][0]["content"])
    except (KeyError, IndexError, TypeError):
        return ""
