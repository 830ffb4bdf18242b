"""ADK-owned sliding-window compaction with a scripted summarizer model.

ADK's own ``LlmEventSummarizer`` builds the summary events (their shape is
ADK's), with a prompt of the conversation's lines alone; its model answers
with those lines counted, first and last: a function of the request alone.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.adk.apps.app import EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class ScriptedSummarizerLlm(BaseLlm):
    """Summarizes a prompt into ``summary of N lines: FIRST .. LAST``."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One complete summary of the request's conversation lines."""
        prompt = "".join(
            part.text or "" for content in llm_request.contents for part in content.parts or []
        )
        lines = prompt.splitlines()
        text = f"summary of {len(lines)} lines: {lines[0]} .. {lines[-1]}" if lines else "empty"
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def sliding_window(interval: int, overlap: int) -> EventsCompactionConfig:
    """ADK's sliding window every `interval` invocations, `overlap` re-included, scripted."""
    model = ScriptedSummarizerLlm(model="scripted-summarizer")
    summarizer = LlmEventSummarizer(llm=model, prompt_template="{conversation_history}")
    return EventsCompactionConfig(
        summarizer=summarizer, compaction_interval=interval, overlap_size=overlap
    )
