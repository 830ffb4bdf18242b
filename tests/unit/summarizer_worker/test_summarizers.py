"""The contract every `Summarizer` backend keeps, run against each of them.

The OpenAI backend runs against the local chat server, whose completion is a
bounded digest of the prompt, so it is deterministic here too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from schemas.event import Event
from summarizer_worker.backends import open_summarizer
from summarizer_worker.extractive import ExtractiveSummarizer
from summarizer_worker.openai_chat import OpenAIChatSummarizer
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.summarizers import Summarizer
from tests.support.chat_server import ECHO_MAX_CHARS, ChatServer
from tests.support.events import call_event, text_event

EXTRACTIVE_MAX_CHARS = 800


@dataclass(frozen=True)
class Backend:
    """A backend under test and what the contract expects of it."""

    summarizer: Summarizer
    max_chars: int
    reports_usage: bool
    server: ChatServer | None


@pytest.fixture(params=["extractive", "openai"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """Each backend, built from settings as the worker builds it."""
    if request.param == "extractive":
        settings = SummarizerSettings(extractive_max_chars=EXTRACTIVE_MAX_CHARS)
        async with open_summarizer(settings) as summarizer:
            assert isinstance(summarizer, ExtractiveSummarizer)
            yield Backend(summarizer, EXTRACTIVE_MAX_CHARS, reports_usage=False, server=None)
        return
    server = ChatServer()
    await server.start()
    settings = SummarizerSettings(
        summarizer="openai",
        openai_base_url=server.base_url,
        openai_model="contract-model",
        openai_api_key=SecretStr("sk-contract"),
        openai_timeout_s=5.0,
    )
    try:
        async with open_summarizer(settings) as summarizer:
            assert isinstance(summarizer, OpenAIChatSummarizer)
            yield Backend(summarizer, ECHO_MAX_CHARS, reports_usage=True, server=server)
    finally:
        await server.close()


def _long_session(turns: int) -> list[Event]:
    events: list[Event] = []
    for turn in range(turns):
        base = 100.0 + 4 * turn
        inv = f"inv{turn}"
        events.append(text_event(f"u{turn}", inv, base, f"Request {turn}: " + "detail " * 60))
        events.append(call_event(f"c{turn}", inv, base + 1, f"call{turn}", name=f"tool_{turn}"))
        events.append(text_event(f"a{turn}", inv, base + 3, "Answer " * 80, author="agent"))
    return events


WINDOWS: dict[str, Sequence[Event]] = {
    "one-ask": [text_event("e1", "inv1", 100.0, "Summarize the quarterly numbers")],
    "ask-and-call": [
        text_event("e1", "inv1", 100.0, "What is the weather in Paris?"),
        call_event("e2", "inv1", 101.0, "c1", name="get_weather"),
        text_event("e3", "inv1", 102.0, "It is sunny.", author="agent"),
    ],
    "long": _long_session(40),
    "seeded": [
        text_event(
            "seed", "seed-inv", 90.0, "Earlier: the user wanted a trip plan.", author="model"
        ),
        text_event("e1", "inv2", 100.0, "Now book the train, please"),
    ],
}


@pytest.mark.parametrize("name", list(WINDOWS))
async def test_a_non_empty_window_gets_a_bounded_non_empty_summary(
    backend: Backend, name: str
) -> None:
    result = await backend.summarizer.summarize(WINDOWS[name])
    assert result is not None
    assert result.text.strip()
    assert len(result.text) <= backend.max_chars
    assert (result.usage is not None) == backend.reports_usage


async def test_different_windows_get_different_summaries(backend: Backend) -> None:
    one = await backend.summarizer.summarize(WINDOWS["one-ask"])
    other = await backend.summarizer.summarize(WINDOWS["ask-and-call"])
    assert one is not None
    assert other is not None
    assert one.text != other.text


async def test_an_empty_window_has_no_summary(backend: Backend) -> None:
    assert await backend.summarizer.summarize([]) is None
    if backend.server is not None:
        assert backend.server.received == []


async def test_a_summary_rolled_in_as_a_seed_stays_bounded(backend: Backend) -> None:
    window: list[Event] = list(WINDOWS["long"][:3])
    for turn in range(10):
        result = await backend.summarizer.summarize(window)
        assert result is not None
        assert len(result.text) <= backend.max_chars
        seed = text_event(f"s{turn}", f"seed{turn}", 100.0, result.text, author="model")
        window = [seed, *_long_session(turn + 2)[-3:]]
