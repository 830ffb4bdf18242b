"""What the model saw: every ``LlmRequest.contents``, in call order, as plain JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.adk.models.llm_request import LlmRequest

Json = Any


@dataclass(frozen=True)
class RecordedCall:
    """One model call: the agent whose model was called, and the contents it was given."""

    agent: str
    contents: list[Json]


@dataclass
class Recorder:
    """Collects the calls of every scripted model of one run."""

    calls: list[RecordedCall] = field(default_factory=list)

    def record(self, agent: str, request: LlmRequest) -> None:
        """Keep a copy of `request`'s contents (later mutations of the request do not reach it)."""
        contents = [
            content.model_dump(mode="json", exclude_none=True) for content in request.contents
        ]
        self.calls.append(RecordedCall(agent, contents))
