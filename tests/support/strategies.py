"""Hypothesis strategies that build valid-looking ADK sessions as logged records.

A session is a list of whole invocations: a user message, then agent steps
(text, thoughts, tool calls with responses, parallel calls, long-running
calls answered later or never, confirmation and auth requests in ADK's shapes,
transfers to another agent on its own branch, tool progress on
``<tool>@<call id>`` sub-branches, state deltas with ``app:``/``user:``/
``temp:`` keys, scoped events, transcriptions, reused and id-less call ids).
Between invocations: summaries shaped like ADK's (author ``"user"``, no
content, ``actions.compaction``) over earlier ranges, some rolling (starting
at the previous summary's start), some naming a compaction request, a few
duplicates of an earlier request; and rewinds (to an earlier, an unknown or a
later invocation). Timestamps mostly rise; some tie and some come late.
Offsets rise with gaps, as in a partition shared with other sessions.

Timestamps are finite: with NaN, sorting by timestamp (which ADK's masking
does) depends on the list it is given, and no incremental view can match it.

:func:`large_sessions` are the same made long (hundreds of records), with a
third agent and tool events that arrive late, inside a range a summary
already masks; :func:`core_sessions` mixes them in under the ``deep``
hypothesis profile (see ``tests/conftest.py``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final, Protocol, TypeVar

from hypothesis import settings
from hypothesis import strategies as st

from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.contents.assembly import ContentsRequest
from projections.event_kinds import summary_request_id
from schemas.deletion_mark import deletion_event
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.support.events import envelope, logged

AGENTS: Final = ("root", "helper")
#: The agents of :func:`large_sessions`.
LARGE_AGENTS: Final = ("root", "helper", "critic")
AGENT_BRANCHES: Final = {"root": "root", "helper": "root.helper", "critic": "root.critic"}
#: The hypothesis profile under which :func:`core_sessions` adds large sessions.
DEEP_PROFILE: Final = "deep"
SCOPE: Final = "task-1"

Json = dict[str, Any]
T = TypeVar("T")
#: Seeds of the pseudo-random choices of :func:`large_sessions`.
SEEDS: Final = st.integers(0, 2**64 - 1)

_STEPS: Final = (
    "text",
    "text",
    "thought",
    "tool",
    "tool",
    "parallel",
    "parallel",
    "long_running",
    "answer_open",
    "answer_open",
    "answer_open",
    "confirmation",
    "auth",
    "transfer",
    "state",
    "scoped",
    "transcription",
    "reused_id",
    "idless",
    "progress_first",
)
#: Steps of large sessions: every step above, and tool events that arrive late.
_LARGE_STEPS: Final = (*_STEPS, "late_call", "late_call", "late_call", "late_answer", "late_answer")


class _Choices(Protocol):
    """Where a generator's choices come from."""

    def pick(self, options: Sequence[T]) -> T:
        """One of `options` (not empty)."""
        ...

    def between(self, low: int, high: int) -> int:
        """An integer from `low` to `high`, both included."""
        ...

    def coin(self) -> bool:
        """True or False."""
        ...


class _Drawn:
    """Choices drawn by hypothesis: recorded, replayed and shrunk by it."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def pick(self, options: Sequence[T]) -> T:
        return self._draw(st.sampled_from(options))

    def between(self, low: int, high: int) -> int:
        return self._draw(st.integers(low, high))

    def coin(self) -> bool:
        return self._draw(st.booleans())


class _Seeded:
    """Choices from a seeded pseudo-random generator, one seed drawn by hypothesis.

    For :func:`large_sessions`: drawing each of a long session's thousands of
    choices through hypothesis cost most of a deep run (about 0.8 s a
    session); the seed replays the session exactly, and hypothesis shrinks
    it as one number.
    """

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)  # noqa: S311 - test data, not a secret

    def pick(self, options: Sequence[T]) -> T:
        return options[self._random.randrange(len(options))]

    def between(self, low: int, high: int) -> int:
        return self._random.randint(low, high)

    def coin(self) -> bool:
        return self._random.random() < 0.5


class _SessionWriter:
    """Writes one generated session event by event (mutable; used inside a draw only)."""

    def __init__(
        self,
        choices: _Choices,
        *,
        agents: tuple[str, ...] = AGENTS,
        steps: tuple[str, ...] = _STEPS,
        max_steps: int = 4,
    ) -> None:
        self.choices = choices
        self.agents = agents
        self.steps = steps
        self.max_steps = max_steps
        self.events: list[Event] = []
        self.clock = 100.0
        self.serial = 0
        self.invocations: list[str] = []
        self.used_call_ids: list[str] = []
        # (call id, tool name, calling agent) of calls still waiting for an answer.
        self.open_calls: list[tuple[str, str, str]] = []
        self.summary_starts: list[float] = []
        # (start, end) of every summary written, in order.
        self.summary_ranges: list[tuple[float, float]] = []
        self.request_ids: list[str] = []

    # -- primitives ---------------------------------------------------------

    def pick(self, options: Sequence[T]) -> T:
        return self.choices.pick(options)

    def between(self, low: int, high: int) -> int:
        return self.choices.between(low, high)

    def coin(self) -> bool:
        return self.choices.coin()

    def timestamp(self) -> float:
        self.clock += 1.0
        how = self.pick(("next",) * 8 + ("tie", "late"))
        if how == "tie" and self.events:
            return self.events[-1].timestamp
        if how == "late":
            return self.clock - self.between(2, 6)
        return self.clock

    def late_timestamp(self) -> float:
        """A timestamp far back: inside a summarized range when there is one."""
        if self.summary_ranges and self.between(0, 3) > 0:
            start, end = self.pick(self.summary_ranges[-3:])
            inside = [e.timestamp for e in self.events if start <= e.timestamp <= end]
            return self.pick([start, end, *inside[-5:]])
        return self.clock - self.between(5, 30)

    def new_id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def add_event(self, event: Event) -> None:
        self.events.append(event)

    def call_id(self) -> str:
        call_id = self.new_id(self.pick(("c", "adk-c")))
        self.used_call_ids.append(call_id)
        return call_id

    def usage(self) -> Json:
        if not self.coin():
            return {}
        return {
            "usage_metadata": {
                "prompt_token_count": self.between(10, 5000),
                "candidates_token_count": self.between(0, 200),
            }
        }

    def state_delta(self) -> Json:
        keys = ("n", "mode", "app:theme", "user:lang", "temp:scratch")
        values: tuple[Any, ...] = (None, *range(10), "a", "b")
        return {self.pick(keys): self.pick(values) for _ in range(self.between(0, 3))}

    # -- invocations --------------------------------------------------------

    def invocation(self) -> None:
        invocation = f"inv{len(self.invocations) + 1}"
        self.invocations.append(invocation)
        agent = self.pick(self.agents)
        branch = self.pick((None, AGENT_BRANCHES[agent]))
        delta = self.state_delta()
        self.add(
            "user",
            invocation,
            [{"text": self.pick(("hi", "next", "why?", "go on"))}],
            actions={"state_delta": delta},
        )
        for _ in range(self.between(0, self.max_steps)):
            kind = self.pick(self.steps)
            agent, branch = self.step(kind, invocation, agent, branch)

    def step(
        self, kind: str, invocation: str, agent: str, branch: str | None
    ) -> tuple[str, str | None]:
        where: Json = {"branch": branch}
        match kind:
            case "text":
                parts: list[Json] = [{"text": self.pick(("ok", "sure", "done"))}]
                if self.coin():
                    parts.insert(0, {"text": "hmm", "thought": True})
                self.add(agent, invocation, parts, **where, **self.usage())
            case "thought":
                self.add(agent, invocation, [{"text": "thinking", "thought": True}], **where)
            case "tool" | "reused_id":
                call_id = self.call_id()
                if kind == "reused_id" and self.used_call_ids:
                    call_id = self.pick(self.used_call_ids)
                self.tool_pair(invocation, agent, branch, [call_id])
            case "parallel":
                self.tool_pair(invocation, agent, branch, [self.call_id(), self.call_id()])
            case "idless":
                self.add(agent, invocation, [_call(None, "lookup")], **where)
                self.add(agent, invocation, [_response(None, "lookup")], role="user", **where)
            case "long_running":
                call_id = self.call_id()
                self.add(
                    agent,
                    invocation,
                    [_call(call_id, "ask_manager")],
                    long_running_tool_ids=[call_id],
                    **where,
                )
                self.open_calls.append((call_id, "ask_manager", agent))
                if self.coin():  # interim "pending" response
                    pending = [_response(call_id, "ask_manager", {"status": "pending"})]
                    self.add_user_role(agent, invocation, pending, where)
            case "answer_open":
                if self.open_calls:
                    index = self.between(0, len(self.open_calls) - 1)
                    call_id, name, _caller = self.open_calls.pop(index)
                    author = self.pick(("user", agent))
                    self.add_user_role(author, invocation, [_response(call_id, name)], where)
            case "confirmation":
                self.confirmation(invocation, agent, where)
            case "auth":
                self.auth(invocation, agent, where)
            case "transfer":
                target = self.pick([a for a in self.agents if a != agent])
                call_id = self.call_id()
                self.add(agent, invocation, [_call(call_id, "transfer_to_agent")], **where)
                self.add_user_role(
                    agent,
                    invocation,
                    [_response(call_id, "transfer_to_agent")],
                    where,
                    actions={"transfer_to_agent": target},
                )
                return target, AGENT_BRANCHES[target]
            case "state":
                self.add(agent, invocation, None, actions={"state_delta": self.state_delta()})
            case "scoped":
                self.add(agent, invocation, [{"text": "task note"}], isolation_scope=SCOPE)
            case "transcription":
                for text in [self.pick(("Hel", "lo")) for _ in range(self.between(0, 2))]:
                    self.add("user", invocation, None, input_transcription={"text": text})
            case "progress_first":
                # Progress names a call id before the call is recorded (out of order).
                call_id = self.call_id()
                # A name may hold an "@" itself: the id follows the last one.
                tool = self.pick(("wf_tool", "wf@tool"))
                progress = f"{branch or 'root'}.{tool}@{call_id}"
                self.add("inner", invocation, [{"text": "step"}], branch=progress)
                self.tool_pair(invocation, agent, branch, [call_id], name="wf_tool")
            case "late_call":
                self.late_call(invocation, agent, where)
            case "late_answer":
                # An open call answered with a timestamp far back (often masked).
                if self.open_calls:
                    index = self.between(0, len(self.open_calls) - 1)
                    call_id, name, _caller = self.open_calls.pop(index)
                    late = {**where, "timestamp": self.late_timestamp()}
                    self.add_user_role(agent, invocation, [_response(call_id, name)], late)
            case _:
                raise AssertionError(kind)
        return agent, branch

    def add_user_role(
        self, author: str, invocation: str, parts: list[Json], where: Json, **fields: Any
    ) -> None:
        self.add(author, invocation, parts, role="user", **where, **fields)

    def add(
        self,
        author: str,
        invocation: str,
        parts: list[Json] | None,
        *,
        role: str | None = None,
        **fields: Any,
    ) -> None:
        """Append an event; the content role follows the author unless given."""
        data: Json = {
            "id": self.new_id("e"),
            "invocation_id": invocation,
            "author": author,
            "timestamp": self.timestamp(),
        }
        if parts is not None:
            default_role = "user" if author == "user" else "model"
            data["content"] = {"role": role or default_role, "parts": parts}
        data.update(fields)
        self.events.append(Event.model_validate(data))

    def tool_pair(
        self,
        invocation: str,
        agent: str,
        branch: str | None,
        call_ids: list[str],
        name: str = "search",
    ) -> None:
        where: Json = {"branch": branch}
        self.add(agent, invocation, [_call(i, name) for i in call_ids], **where, **self.usage())
        if self.coin():
            progress = f"{branch or 'root'}.{name}@{call_ids[0]}"
            self.add("inner", invocation, [{"text": "working"}], branch=progress)
        answered = [i for i in call_ids if self.between(0, 5) > 0]
        # An unanswered call may be answered in a later invocation (or never).
        self.open_calls.extend((i, name, agent) for i in call_ids if i not in answered)
        together: bool = self.coin()
        if answered and together:
            self.add_user_role(agent, invocation, [_response(i, name) for i in answered], where)
        else:
            for call_id in answered:
                self.add_user_role(agent, invocation, [_response(call_id, name)], where)

    def late_call(self, invocation: str, agent: str, where: Json) -> None:
        """A call event that arrives late, inside a summarized range when there is one.

        Its calls (one or two, parallel) are each answered now (a fresh
        timestamp, so the response stays visible and §8.4 restores the
        masked call), answered late too, or left open for a later step.
        """
        call_ids = [self.call_id() for _ in range(self.between(1, 2))]
        name = "late_lookup"
        late = {**where, "timestamp": self.late_timestamp()}
        self.add(agent, invocation, [_call(i, name) for i in call_ids], **late)
        for call_id in call_ids:
            match self.pick(("now", "now", "late", "open")):
                case "now":
                    self.add_user_role(agent, invocation, [_response(call_id, name)], where)
                case "late":
                    late = {**where, "timestamp": self.late_timestamp()}
                    self.add_user_role(agent, invocation, [_response(call_id, name)], late)
                case _:
                    self.open_calls.append((call_id, name, agent))

    def confirmation(self, invocation: str, agent: str, where: Json) -> None:
        """ADK's confirmation shape: call, confirmation request, placeholder, answers."""
        call_id, request_id = self.call_id(), self.new_id("adk-conf")
        self.add(agent, invocation, [_call(call_id, "delete_file")], **where)
        self.add(
            agent,
            invocation,
            [_call(request_id, "adk_request_confirmation", {"originalFunctionCall": call_id})],
            long_running_tool_ids=[request_id],
            **where,
        )
        placeholder = [_response(call_id, "delete_file", {"error": "needs confirmation"})]
        self.add_user_role(
            agent,
            invocation,
            placeholder,
            where,
            actions={"requested_tool_confirmations": {call_id: {"hint": "sure?"}}},
        )
        if self.coin():
            confirmed = [_response(request_id, "adk_request_confirmation", {"confirmed": True})]
            self.add_user_role("user", invocation, confirmed, {})
            self.add_user_role(agent, invocation, [_response(call_id, "delete_file")], where)

    def auth(self, invocation: str, agent: str, where: Json) -> None:
        """ADK's auth shape: call, credential request naming it, later the answers."""
        call_id, request_id = self.call_id(), self.new_id("adk-auth")
        self.add(agent, invocation, [_call(call_id, "fetch_mail")], **where)
        self.add(
            agent,
            invocation,
            [_call(request_id, "adk_request_credential", {"function_call_id": call_id})],
            long_running_tool_ids=[request_id],
            actions={"requested_auth_configs": {call_id: {"scheme": "oauth2"}}},
            **where,
        )
        if self.coin():
            token = [_response(request_id, "adk_request_credential", {"token": "t"})]
            self.add_user_role("user", invocation, token, {})
            self.add_user_role(agent, invocation, [_response(call_id, "fetch_mail")], where)

    # -- between invocations ------------------------------------------------

    def summary(self) -> None:
        raw = [e for e in self.events if e.actions.compaction is None]
        if not raw:
            return
        last = self.between(0, len(raw) - 1)
        rolling: bool = self.coin()
        if self.summary_starts and rolling:
            start = self.summary_starts[-1]  # rolling: contains the previous summary
        else:
            start = raw[self.between(0, last)].timestamp
        end = raw[last].timestamp
        self.summary_starts.append(start)
        self.summary_ranges.append((start, end))
        fields: Json = {
            "id": self.new_id("s"),
            "invocation_id": self.new_id("cmp-"),
            "author": "user",
            "timestamp": self.timestamp(),
            "branch": self.pick((None,) * 6 + ("root.helper", "root.critic")),
            "actions": {
                "compaction": {
                    "start_timestamp": start,
                    "end_timestamp": end,
                    "compacted_content": {"role": "model", "parts": [{"text": f"sum {start}"}]},
                }
            },
            **self.usage(),
        }
        if self.between(0, 9) == 0:
            fields["isolation_scope"] = SCOPE
        event = Event.model_validate(fields)
        naming = self.pick(("fresh", "fresh", "none", "duplicate"))
        if naming == "duplicate" and self.request_ids:
            event = with_summary_request_id(event, self.pick(self.request_ids))
        elif naming != "none":
            request_id = self.new_id("req-")
            self.request_ids.append(request_id)
            event = with_summary_request_id(event, request_id)
        self.add_event(event)

    def rewind(self) -> None:
        later = f"inv{len(self.invocations) + 1}"  # appears only later
        target = self.pick(self.pick((self.invocations, ["inv-unknown"], [later])))
        self.add(
            "user",
            self.new_id("e-"),
            None,
            actions={"rewind_before_invocation_id": target, "state_delta": {"n": None}},
        )


def _call(call_id: str | None, name: str, args: Json | None = None) -> Json:
    body: Json = {"name": name, "args": args or {"q": name}}
    if call_id is not None:
        body["id"] = call_id
    return {"function_call": body}


def _response(call_id: str | None, name: str, response: Json | None = None) -> Json:
    body: Json = {"name": name, "response": response or {"result": "ok"}}
    if call_id is not None:
        body["id"] = call_id
    return {"function_response": body}


def _write_session(writer: _SessionWriter, invocations: int) -> list[Event]:
    """`invocations` invocations, each followed now and then by a summary and a rewind."""
    for _ in range(invocations):
        writer.invocation()
        if writer.between(0, 9) < 4:
            writer.summary()
        if writer.between(0, 19) < 3:
            writer.rewind()
    return writer.events


@st.composite
def session_events(draw: st.DrawFn, max_invocations: int = 6) -> list[Event]:
    """The events of one generated session, stream order."""
    return _write_session(_SessionWriter(_Drawn(draw)), draw(st.integers(1, max_invocations)))


@st.composite
def large_session_events(
    draw: st.DrawFn, min_invocations: int = 25, max_invocations: int = 50
) -> list[Event]:
    """The events of one long session, stream order: about 100 to 400 events.

    Three agents (:data:`LARGE_AGENTS`, transfers between them on their
    branches), up to six steps per invocation, every step kind of
    :func:`session_events` plus tool calls and responses that arrive late
    (timestamps inside a range a summary already masks), and the summaries
    and rewinds between invocations.
    """
    return _large_session_events(_Seeded(draw(SEEDS)), min_invocations, max_invocations)


def _large_session_events(
    choices: _Choices, min_invocations: int, max_invocations: int
) -> list[Event]:
    writer = _SessionWriter(choices, agents=LARGE_AGENTS, steps=_LARGE_STEPS, max_steps=6)
    return _write_session(writer, choices.between(min_invocations, max_invocations))


@st.composite
def sessions(
    draw: st.DrawFn,
    max_invocations: int = 6,
    *,
    refusals: bool = False,
    deletions: bool = False,
) -> list[LoggedEvent]:
    """One generated session as logged records, offsets rising with gaps.

    Now and then a producer retries (an equal event at a new offset) or a
    streaming chunk (a partial event) reaches the topic: neither is stored.
    With `refusals`, now and then the pipeline refuses a request (one a
    summary names, or another): a bookkeeping record that is never stored.
    With `deletions`, now and then the session is deleted, and now and then a
    late summary answers a request an earlier summary named (a deleted one, or
    a duplicate).
    """
    events = draw(session_events(max_invocations))
    return _as_records(_Drawn(draw), events, refusals=refusals, deletions=deletions)


@st.composite
def large_sessions(
    draw: st.DrawFn, *, refusals: bool = False, deletions: bool = False
) -> list[LoggedEvent]:
    """One long session (:func:`large_session_events`) as logged records, as :func:`sessions`."""
    choices = _Seeded(draw(SEEDS))
    events = _large_session_events(choices, 25, 50)
    return _as_records(choices, events, refusals=refusals, deletions=deletions)


def seeded_session(seed: int, invocations: int = 6) -> list[LoggedEvent]:
    """One session as :func:`sessions` makes them (refusals and deletions), from a seed alone.

    For tests that run a whole pipeline once over many sessions, outside hypothesis.
    """
    choices = _Seeded(seed)
    events = _write_session(_SessionWriter(choices), choices.between(1, invocations))
    return _as_records(choices, events, refusals=True, deletions=True)


#: A per-prefix property checks every prefix of a session up to this many records.
EVERY_PREFIX_UP_TO: Final = 64
#: Beyond :data:`EVERY_PREFIX_UP_TO`, it checks this many drawn prefixes, and the whole session.
DRAWN_PREFIXES: Final = 32


@st.composite
def checked_prefixes(draw: st.DrawFn, length: int) -> frozenset[int]:
    """The prefix lengths a per-prefix property of a `length`-record session checks.

    Every one from 1 to :data:`EVERY_PREFIX_UP_TO`, then :data:`DRAWN_PREFIXES`
    drawn ones and `length` itself. The fold still applies every record; only
    the rebuild it is compared with, O(prefix) each, runs less often, so the
    large sessions of the deep profile cost O(n) rebuilds' worth of work
    instead of O(n^2).
    """
    every = set(range(1, min(length, EVERY_PREFIX_UP_TO) + 1))
    if length <= EVERY_PREFIX_UP_TO:
        return frozenset(every)
    beyond = st.integers(EVERY_PREFIX_UP_TO + 1, length)
    drawn = draw(st.sets(beyond, min_size=1, max_size=DRAWN_PREFIXES))
    return frozenset(every | drawn | {length})


def core_sessions(
    *, refusals: bool = False, deletions: bool = False
) -> st.SearchStrategy[list[LoggedEvent]]:
    """The sessions the core's main properties run on, by the loaded hypothesis profile.

    :func:`sessions` under every profile; under :data:`DEEP_PROFILE` one
    example in five is a :func:`large_sessions` instead. Read when a test
    module is imported, after ``tests/conftest.py`` loaded the profile.
    """
    small = sessions(refusals=refusals, deletions=deletions)
    if settings.get_current_profile_name() != DEEP_PROFILE:
        return small
    large = large_sessions(refusals=refusals, deletions=deletions)
    return st.integers(0, 4).flatmap(lambda pick: large if pick == 4 else small)


def _as_records(
    choices: _Choices, generated: list[Event], *, refusals: bool, deletions: bool = False
) -> list[LoggedEvent]:
    """`generated` with retries, chunks, refusals and deletions, at rising offsets with gaps."""
    events: list[Event] = []
    named: list[str] = []
    summaries: list[Event] = []
    for event in generated:
        events.append(event)
        if (request_id := summary_request_id(event)) is not None:
            named.append(request_id)
            summaries.append(event)
        noise = choices.between(0, 29 if deletions else 19)
        if noise == 0:
            events.append(event.model_copy())
        elif noise == 1 and event.content is not None:
            events.append(event.model_copy(update={"partial": True, "id": f"{event.id}-chunk"}))
        elif noise in (2, 3) and refusals:
            refused = choices.pick([*named, "req-never-named"])
            refusal = refusal_event(
                refused, "gave up", event_id=f"refusal-{len(events)}", timestamp=event.timestamp
            )
            events.append(refusal)
        elif noise == 20 and deletions:
            events.append(deletion_event(event_id=f"deleted-{len(events)}", timestamp=0.0))
        elif noise == 21 and deletions and summaries:
            late = choices.pick(summaries)  # a late answer to a request named before
            events.append(late.model_copy(update={"id": f"{late.id}-late-{len(events)}"}))
    offsets: list[int] = []
    offset = choices.between(0, 50)
    for _ in events:
        offsets.append(offset)
        offset += choices.between(1, 3)
    return logged(events, offsets)


def view_requests() -> st.SearchStrategy[ContentsRequest]:
    """Default-mode requests for the agents and branches the sessions use."""
    return st.builds(
        ContentsRequest,
        agent_name=st.sampled_from(("", "root", "helper")),
        current_branch=st.sampled_from((None, "root", "root.helper")),
        preserve_function_call_ids=st.booleans(),
        include_thoughts_from_other_agents=st.booleans(),
        isolation_scope=st.sampled_from((None, None, None, SCOPE)),
    )


ARMED_THRESHOLD: Final = 100
"""The token threshold :func:`armed_sessions` report prompt tokens around."""

_ARMED_KINDS: Final = (
    ("none",) * 10
    + ("crumb",) * 4
    + ("tiny",) * 2
    + ("large", "call", "open_call", "scoped", "old_invocation", "no_invocation")
)
#: Contents of 2, 15 and 26 characters of JSON: below the gate's 27 alone, not together.
_CRUMBS: Final[tuple[Json, ...]] = ({}, {"role": "user"}, {"role": "user", "parts": []})


@st.composite
def armed_sessions(draw: st.DrawFn, max_invocations: int = 20) -> list[Event]:
    """Sessions whose compaction triggers stay armed while their windows are rarely worth it.

    Invocations of one to three events, mostly content-less (a state delta
    only), some with crumbs of content (2 to 26 characters of JSON, under the
    gate's 27 alone), some with a one-character text, a few large (40 to 400
    characters), tool call pairs, long-running calls left open, scoped
    events, events of an older invocation or of none. Timestamps mostly rise;
    some tie, some come a little late and some far back. Half the events
    report prompt tokens just below, at or just above :data:`ARMED_THRESHOLD`.
    Between invocations, now and then a summary over an earlier range (tiny
    or large, named or not) or a rewind (to an earlier or an unknown
    invocation).
    """
    events: list[Event] = []
    invocations: list[str] = []
    clock = 100.0
    for number in range(1, draw(st.integers(1, max_invocations)) + 1):
        invocation = f"inv{number}"
        invocations.append(invocation)
        for _ in range(draw(st.integers(1, 3))):
            clock += 1.0
            how = draw(st.sampled_from(("next",) * 7 + ("tie", "late", "far_back")))
            timestamp = {
                "next": clock,
                "tie": events[-1].timestamp if events else clock,
                "late": clock - draw(st.integers(2, 6)),
                "far_back": clock - draw(st.integers(20, 60)),
            }[how]
            kind = draw(st.sampled_from(_ARMED_KINDS))
            events.append(_armed_event(draw, kind, len(events), invocation, invocations, timestamp))
        between = draw(st.integers(0, 19))
        if between < 2 and events:
            clock += 1.0
            events.append(_armed_summary(draw, events, clock))
        elif between == 2:
            clock += 1.0
            target = draw(st.sampled_from([*invocations, "inv-unknown"]))
            events.append(
                Event.model_validate(
                    {
                        "id": f"rw{len(events)}",
                        "invocation_id": f"rw-inv{len(events)}",
                        "author": "user",
                        "timestamp": clock,
                        "actions": {"rewind_before_invocation_id": target},
                    }
                )
            )
    return events


def _armed_event(
    draw: st.DrawFn,
    kind: str,
    serial: int,
    invocation: str,
    invocations: list[str],
    timestamp: float,
) -> Event:
    data: Json = {
        "id": f"e{serial}",
        "invocation_id": invocation,
        "author": draw(st.sampled_from(("user", "root"))),
        "timestamp": timestamp,
        "actions": {"state_delta": {"n": serial}},
    }
    call_id = f"c{serial}"
    match kind:
        case "crumb":
            data["content"] = draw(st.sampled_from(_CRUMBS))
        case "tiny":
            data["content"] = {"role": "user", "parts": [{"text": "k"}]}
        case "large":
            text = "x" * draw(st.integers(40, 400))
            data["content"] = {"role": "model", "parts": [{"text": text}]}
        case "call":
            data["content"] = {"role": "model", "parts": [_call(call_id, "search")]}
        case "open_call":
            data["content"] = {"role": "model", "parts": [_call(call_id, "ask_manager")]}
            data["long_running_tool_ids"] = [call_id]
        case "scoped":
            data["content"] = {"role": "model", "parts": [{"text": "task note"}]}
            data["isolation_scope"] = SCOPE
        case "old_invocation":
            data["invocation_id"] = draw(st.sampled_from(invocations))
        case "no_invocation":
            data["invocation_id"] = ""
    if draw(st.booleans()):
        tokens = ARMED_THRESHOLD + draw(st.integers(-3, 3))
        data["usage_metadata"] = {"prompt_token_count": tokens}
    return Event.model_validate(data)


def _armed_summary(draw: st.DrawFn, events: list[Event], timestamp: float) -> Event:
    """A summary over about the range of two earlier events (some inverted), tiny or large.

    Its bounds fall on or half a second beside an event's timestamp, so some
    events next to a range stay uncovered; its invocation id is sometimes one
    a later invocation takes (``inv<n>``).
    """
    jitter = st.sampled_from((0.0, 0.0, -0.5, 0.5))
    first = draw(st.sampled_from(events)).timestamp + draw(jitter)
    last = draw(st.sampled_from(events)).timestamp + draw(jitter)
    start, end = sorted((first, last)) if draw(st.integers(0, 5)) else (last, first)
    text = "s" if draw(st.booleans()) else "s" * draw(st.integers(40, 400))
    invocation = draw(st.sampled_from((f"cmp-{len(events)}", f"inv{len(events) // 2}")))
    event = Event.model_validate(
        {
            "id": f"s{len(events)}",
            "invocation_id": invocation,
            "author": "user",
            "timestamp": timestamp,
            "actions": {
                "compaction": {
                    "start_timestamp": start,
                    "end_timestamp": end,
                    "compacted_content": {"role": "model", "parts": [{"text": text}]},
                }
            },
        }
    )
    if draw(st.booleans()):
        event = with_summary_request_id(event, f"req-s{len(events)}")
    return event


# -- multi-session logs for the projector's batch step ------------------------------
#
# The sessions of :func:`sessions` re-keyed to a few sessions of several tenants
# and apps, so that the per-tenant and per-app compaction configs and view
# agents of :data:`SETTINGS` all take part. The pipeline's answers to their
# requests are :func:`tests.support.events.answer_envelope` and
# :func:`tests.support.events.refusal_envelope`.

PARTITIONS: Final = 2
"""Partitions of the `events` topic: the keys below share them."""

KEYS: Final = tuple(
    SessionKey(key)
    for key in (
        "acme/support/u1/s1",
        "acme/support/u2/s2",
        "acme/sales/u1/s3",
        "beta/support/u3/s4",
        "gamma/support/u4/s5",
        "gamma/billing/u5/s6",
    )
)

SETTINGS: Final = ProjectorSettings(
    # Small triggers, so that decisions happen often: the generated events report
    # 10 to 5,000 prompt tokens on about half of the model responses.
    compaction={
        "compaction_interval": 2,
        "overlap_size": 1,
        "token_threshold": 2_000,
        "event_retention_size": 2,
    },
    compaction_overrides={
        "beta": {"compaction_interval": 3, "overlap_size": 0},  # sliding window only
        "gamma/support": {"token_threshold": 1_000, "event_retention_size": 1},  # tokens only
    },
    view_agent_names={"acme/support": "root", "beta/support": "helper"},
)


@st.composite
def session_logs(
    draw: st.DrawFn, max_sessions: int = 4, max_invocations: int = 4
) -> dict[SessionKey, list[Envelope]]:
    """Two to `max_sessions` sessions of :data:`KEYS`, each its records in stream order."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=2, max_size=max_sessions, unique=True))
    logs: dict[SessionKey, list[Envelope]] = {}
    for key in keys:
        records = draw(sessions(max_invocations, refusals=True))
        logs[key] = [envelope(key, record.envelope.event) for record in records]
    return logs
