"""One agents-workload session's invocations, as ADK writes their events. Pure: no I/O, no clock.

An invocation of an app's agent (:mod:`ctxstream.bench.agents.apps`) is

1. the user's message; one in four carries a ``user:`` state delta, one in
   five a session one;
2. half the time (when tools follow) the model's text saying what it will do;
3. the app's number of tool rounds: the model's call event (one call, or two
   at once for a parallel round) and one event with their responses, as ADK
   merges parallel responses (author the agent, role ``user``, same ids and
   names); a tool with a state key writes it in its response's delta;
4. the model's answer;
5. one time in three a state-only event (an agent callback's delta: the
   session's turn count, one in three with an ``app:`` key).

Every model event reports token usage: its prompt is the simulated context
(the app's system tokens plus a quarter of every character the session
added since its last fall-back), which falls back after an invocation whose
prompt reached the app's ``context_reset_tokens``, as the agent's prompt
does once the summary it triggered is in. Ids are the session's own (``e1``,
``inv1``, ``call-1-0``); each event is one second after the previous one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal

from ctxstream.bench.agents.apps import AppProfile, Tool
from ctxstream.bench.agents.prose import pick, prose

FIRST_TIMESTAMP: Final = 1_700_000_000.0

EventKind = Literal["user", "text", "call", "response", "answer", "state"]
#: Every kind, in the order an invocation has them.
EVENT_KINDS: Final[tuple[EventKind, ...]] = ("user", "text", "call", "response", "answer", "state")


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One event of the workload and what it is.

    Attributes:
        kind: What the event is (the census counts these).
        event: ADK's event as JSON (camelCase), as an envelope carries it.
        calls: Function calls it makes (two for a parallel round).
        state_scopes: The scopes of the state keys it writes: ``session``,
            ``user``, ``app``.
    """

    kind: EventKind
    event: dict[str, Any]
    calls: int = 0
    state_scopes: tuple[str, ...] = ()


def scope_of(state_key: str) -> str:
    """``user``, ``app`` or ``session``: the scope a state key belongs to."""
    for prefix in ("user", "app"):
        if state_key.startswith(f"{prefix}:"):
            return prefix
    return "session"


def session_invocations(app: AppProfile, *, seed: int, session: str) -> Iterator[list[AgentEvent]]:
    """The session's invocations, one list of events each, without end.

    Args:
        app: The session's app.
        seed: The workload's seed.
        session: Names the session among the workload's (its choices are hashed with it).
    """
    writer = _Writer(app, seed, session)
    while True:
        yield writer.invocation()


class _Writer:
    """Writes one session's events: its serial numbers, clock and simulated context."""

    def __init__(self, app: AppProfile, seed: int, session: str) -> None:
        self.app = app
        self.seed = seed
        self.session = session
        self.serial = 0
        self.number = 0
        self.context = app.system_tokens

    def pick(self, what: str, count: int) -> int:
        return pick(self.seed, f"{self.session}/{self.number}/{what}", count)

    def text(self, what: str, chars: int) -> str:
        return prose(self.seed, f"{self.session}/{self.number}/{what}", chars)

    def invocation(self) -> list[AgentEvent]:
        self.number += 1
        app = self.app
        events = [self._user()]
        low, high = app.tool_rounds
        rounds = low + self.pick("rounds", high - low + 1)
        if rounds and self.pick("plan", 2):
            events.append(self._model("text", self.text("plan", 120)))
        for round_number in range(rounds):
            events.extend(self._round(round_number))
        events.append(self._model("answer", self.text("answer", 400)))
        if self.pick("callback", 3) == 0:
            delta: dict[str, Any] = {"turns": self.number}
            if self.pick("app-state", 3) == 0:
                delta["app:answers_given"] = self.number
            events.append(self._event("state", app.agent, {"actions": {"stateDelta": delta}}))
        if self.context >= app.context_reset_tokens:
            self.context = app.system_tokens + app.context_reset_tokens // 4
        return events

    def _user(self) -> AgentEvent:
        text = f"#{self.number}: {self.text('ask', 120)}?"
        fields: dict[str, Any] = {"content": {"role": "user", "parts": [{"text": text}]}}
        delta: dict[str, Any] = {}
        if self.pick("user-state", 4) == 0:
            delta["user:locale"] = ("en-GB", "de-DE", "fr-FR", "ja-JP")[self.pick("locale", 4)]
        if self.pick("session-state", 5) == 0:
            delta["topic"] = self.text("topic", 24)
        if delta:
            fields["actions"] = {"stateDelta": delta}
        self.context += len(text) // 4
        return self._event("user", "user", fields)

    def _round(self, round_number: int) -> list[AgentEvent]:
        app = self.app
        parallel = (
            app.parallel_every and self.pick(f"parallel{round_number}", app.parallel_every) == 0
        )
        tools = [
            app.tools[self.pick(f"tool{round_number}.{index}", len(app.tools))]
            for index in range(2 if parallel else 1)
        ]
        calls = [
            {
                "id": f"call-{self.number}-{round_number}.{index}",
                "name": tool.name,
                "args": {"input": self.text(f"args{round_number}.{index}", tool.args_chars)},
            }
            for index, tool in enumerate(tools)
        ]
        call_event = self._model("call", None, calls)
        responses, delta = [], {}
        for index, (tool, call) in enumerate(zip(tools, calls, strict=True)):
            result = self._result(tool, f"result{round_number}.{index}")
            responses.append(
                {"functionResponse": {"id": call["id"], "name": tool.name, "response": result}}
            )
            if tool.state_key is not None:
                delta[tool.state_key] = f"{tool.name}-{self.number}.{round_number}"
        fields: dict[str, Any] = {"content": {"role": "user", "parts": responses}}
        if delta:
            fields["actions"] = {"stateDelta": delta}
        response_event = self._event("response", app.agent, fields)
        return [call_event, response_event]

    def _result(self, tool: Tool, what: str) -> dict[str, Any]:
        text = self.text(what, tool.response_chars)
        self.context += len(text) // 4
        return {"status": "ok", "result": text}

    def _model(
        self, kind: EventKind, text: str | None, calls: list[dict[str, Any]] | None = None
    ) -> AgentEvent:
        """A model response: text or function calls, with the prompt's token usage."""
        if calls:
            parts: list[dict[str, Any]] = [{"functionCall": call} for call in calls]
            written = sum(len(str(call["args"])) for call in calls) + 20 * len(calls)
        else:
            parts = [{"text": text}]
            written = len(text or "")
        candidates = max(1, written // 4)
        usage = {
            "promptTokenCount": self.context,
            "candidatesTokenCount": candidates,
            "totalTokenCount": self.context + candidates,
        }
        self.context += candidates
        fields = {"content": {"role": "model", "parts": parts}, "usageMetadata": usage}
        return self._event(kind, self.app.agent, fields)

    def _event(self, kind: EventKind, author: str, fields: dict[str, Any]) -> AgentEvent:
        self.serial += 1
        event = {
            "id": f"e{self.serial}",
            "invocationId": f"inv{self.number}",
            "author": author,
            "timestamp": FIRST_TIMESTAMP + self.serial,
            **fields,
        }
        delta = fields.get("actions", {}).get("stateDelta", {})
        content = fields.get("content", {})
        calls = sum(1 for part in content.get("parts", []) if "functionCall" in part)
        scopes = tuple(sorted({scope_of(key) for key in delta}))
        return AgentEvent(kind, event, calls, scopes)
