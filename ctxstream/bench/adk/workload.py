"""The ADK session ``ctxstream bench adk`` reads: a support agent's, with ADK's own summaries.

:func:`adk_session` is `events` ADK events of one session, as a Runner with
``EventsCompactionConfig(token_threshold=2000, event_retention_size=4)`` writes them:
invocations of a user message, zero to two tool calls and their responses (state
deltas of the session, ``user:`` and ``app:`` scopes on some) and the model's
answer with token usage; after an invocation whose last prompt reached the
threshold, ADK's rolling summary from the session's first event up to the
retained tail (its safe split). Pure: ids, timestamps and token counts come from
the position, so the same arguments always give the same events.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

APP_NAME: Final = "support"
USER_ID: Final = "customer-1"
AGENT_NAME: Final = "support_agent"
#: The App's ``EventsCompactionConfig`` the summaries follow (token-threshold compaction).
TOKEN_THRESHOLD: Final = 2_000
EVENT_RETENTION_SIZE: Final = 4
PROMPT_BASE_TOKENS: Final = 800  # instruction and tools
TOKENS_PER_EVENT: Final = 60  # of each raw event in the prompt
FIRST_TIMESTAMP: Final = 1_750_000_000.0
STEP_S: Final = 0.25  # between two events of the session


@dataclass(frozen=True, slots=True)
class AdkSession:
    """One session's ids and its events, oldest first."""

    session_id: str
    events: list[Event]
    app_name: str = APP_NAME
    user_id: str = USER_ID


def adk_session(events: int, *, seed: int = 0) -> AdkSession:
    """The first `events` events of the support session of `seed`.

    Raises:
        ValueError: `events` is negative.
    """
    if events < 0:
        raise ValueError(f"need events >= 0, got {events}")
    generated: list[Event] = []
    for event in _events(seed):
        if len(generated) == events:
            break
        generated.append(event)
    return AdkSession(session_id=f"session-{seed}-{events}", events=generated)


def expected_state(events: list[Event]) -> dict[str, Any]:
    """The merged state ADK's services hold after `events`: every delta in order, no ``temp:``."""
    state: dict[str, Any] = {}
    for event in events:
        delta = event.actions.state_delta or {}
        state.update({k: v for k, v in delta.items() if not k.startswith("temp:")})
    return state


def new_message(turn: int) -> types.Content:
    """The user's message that starts a timed turn."""
    return types.Content(role="user", parts=[types.Part(text=f"Any news on my refund? ({turn})")])


def _id(seed: int, *parts: object) -> str:
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest))


def _pick(seed: int, invocation: int, salt: str, count: int) -> int:
    digest = hashlib.blake2b(f"{seed}:{invocation}:{salt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


class _Clock:
    """The session's timestamps: one step per event."""

    def __init__(self) -> None:
        self.now = FIRST_TIMESTAMP

    def tick(self) -> float:
        self.now += STEP_S
        return self.now


def _events(seed: int) -> Iterator[Event]:
    """The endless event stream: invocations, each followed by ADK's summary when it is due."""
    clock = _Clock()
    context = _Context()
    invocation = 0
    while True:
        invocation_id = f"e-{_id(seed, 'invocation', invocation)}"
        for event in _invocation(seed, invocation, invocation_id, clock, context):
            context.raw.append(event)
            yield event
        invocation += 1
        summary = context.compact(seed, invocation, clock)
        if summary is not None:
            yield summary


class _Context:
    """What ADK's token-threshold compaction reads: the raw events after the last summary."""

    def __init__(self) -> None:
        self.raw: list[Event] = []
        self.start: float | None = None  # of the rolling summary, once there is one

    def prompt_tokens(self) -> int:
        """The prompt of a model call made now (the workload's stand-in for the model's count)."""
        return PROMPT_BASE_TOKENS + TOKENS_PER_EVENT * len(self.raw)

    def compact(self, seed: int, invocation: int, clock: _Clock) -> Event | None:
        """ADK's post-invocation token-threshold summary, when the last prompt reached it."""
        last = self.raw[-1].usage_metadata
        if last is None or (last.prompt_token_count or 0) < TOKEN_THRESHOLD:
            return None
        split = _safe_split(self.raw, len(self.raw) - EVENT_RETENTION_SIZE)
        if split <= 0:
            return None
        compacted, self.raw = self.raw[:split], self.raw[split:]
        self.start = compacted[0].timestamp if self.start is None else self.start
        return _summary(seed, invocation, clock, self.start, compacted[-1].timestamp)


def _safe_split(raw: list[Event], split: int) -> int:
    """The latest index at or before `split` whose tail answers none of the head's calls."""
    unanswered: set[str] = set()
    for index in range(len(raw) - 1, -1, -1):
        unanswered |= {r.id for r in raw[index].get_function_responses() if r.id}
        unanswered -= {c.id for c in raw[index].get_function_calls() if c.id}
        if not unanswered and index <= split:
            return index
    return 0


@dataclass(frozen=True, slots=True)
class _Invocation:
    """One invocation being written: its ids, the session's clock and context."""

    seed: int
    number: int
    invocation_id: str
    clock: _Clock
    context: _Context

    def event(
        self, author: str, content: types.Content, delta: dict[str, Any], *, model: bool = False
    ) -> Event:
        """The next event; a `model` response carries the prompt's token usage."""
        timestamp = self.clock.tick()
        return Event(
            id=_id(self.seed, "event", timestamp),
            invocation_id=self.invocation_id,
            author=author,
            timestamp=timestamp,
            content=content,
            actions=EventActions(state_delta=delta),
            usage_metadata=self._usage(timestamp) if model else None,
        )

    def _usage(self, timestamp: float) -> types.GenerateContentResponseUsageMetadata:
        prompt = self.context.prompt_tokens()
        candidates = 20 + _pick(self.seed, self.number, f"candidates{timestamp}", 80)
        return types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt,
            candidates_token_count=candidates,
            total_token_count=prompt + candidates,
        )


def _invocation(
    seed: int, number: int, invocation_id: str, clock: _Clock, context: _Context
) -> Iterator[Event]:
    """One invocation's events: a question, zero to two tool calls, the answer."""
    writer = _Invocation(seed, number, invocation_id, clock, context)
    order = 1000 + number
    question = f"Where is my order #{order}? I ordered it {number % 9 + 1} days ago."
    user_delta = {"user:last_order": order} if _pick(seed, number, "user", 3) == 0 else {}
    yield writer.event("user", _content("user", types.Part(text=question)), user_delta)
    calls = _pick(seed, number, "calls", 4)  # 0: small talk, 1-2: one tool, 3: two tools
    tools = [] if calls == 0 else ["lookup_order"] if calls < 3 else ["lookup_order", "check_stock"]
    for call_number, tool in enumerate(tools):
        call_id = f"adk-{_id(seed, 'call', number, call_number)}"
        call = types.FunctionCall(id=call_id, name=tool, args={"order_id": order})
        yield writer.event(
            AGENT_NAME, _content("model", types.Part(function_call=call)), {}, model=True
        )
        result = {"order_id": order, "status": "shipped", "eta_days": number % 5 + 1}
        response = types.FunctionResponse(id=call_id, name=tool, response=result)
        delta = {"last_tool": tool, "orders_checked": number + 1}
        yield writer.event(
            AGENT_NAME, _content("user", types.Part(function_response=response)), delta
        )
    answer = f"Your order #{order} has shipped and should arrive in {number % 5 + 1} days."
    app_delta = {"app:answers": number + 1} if number % 5 == 4 else {}
    yield writer.event(
        AGENT_NAME, _content("model", types.Part(text=answer)), app_delta, model=True
    )


def _content(role: str, part: types.Part) -> types.Content:
    return types.Content(role=role, parts=[part])


def _summary(seed: int, invocation: int, clock: _Clock, start: float, end: float) -> Event:
    """ADK's summary event (``LlmEventSummarizer``'s shape) over ``[start, end]``."""
    text = f"The customer asked about orders #1000 to #{999 + invocation}; all shipped."
    timestamp = clock.tick()
    return Event(
        id=_id(seed, "summary", timestamp),
        invocation_id=_id(seed, "summary-invocation", invocation),
        author="user",
        timestamp=timestamp,
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=start,
                end_timestamp=end,
                compacted_content=types.Content(role="model", parts=[types.Part(text=text)]),
            )
        ),
    )
