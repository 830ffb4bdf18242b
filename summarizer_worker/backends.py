"""The summarizer backend the settings choose, built and (for HTTP) closed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import assert_never

import httpx

from summarizer_worker.extractive import ExtractiveSummarizer
from summarizer_worker.openai_chat import OpenAIChatSummarizer
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.summarizers import Summarizer


def make_summarizer(
    settings: SummarizerSettings, *, client: httpx.AsyncClient | None = None
) -> Summarizer:
    """The configured backend.

    Args:
        settings: The process's settings.
        client: The HTTP client an HTTP backend uses. Without one, an OpenAI
            backend makes its own, and whoever calls this closes it
            (``aclose``); `open_summarizer` does both.
    """
    match settings.summarizer:
        case "extractive":
            return ExtractiveSummarizer(max_chars=settings.extractive_max_chars)
        case "openai":
            return OpenAIChatSummarizer(
                base_url=settings.openai_base_url,
                model=settings.openai_model,
                api_key=settings.openai_api_key,
                timeout_s=settings.openai_timeout_s,
                max_retries=settings.openai_max_retries,
                backoff_base_s=settings.openai_backoff_base_s,
                max_backoff_s=settings.openai_max_backoff_s,
                client=client,
            )
        case _:
            assert_never(settings.summarizer)


@asynccontextmanager
async def open_summarizer(settings: SummarizerSettings) -> AsyncIterator[Summarizer]:
    """The configured backend for the life of the block, its HTTP client closed after."""
    if settings.summarizer == "extractive":
        yield make_summarizer(settings)
        return
    async with httpx.AsyncClient() as client:
        yield make_summarizer(settings, client=client)
