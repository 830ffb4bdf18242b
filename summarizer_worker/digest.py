"""What a later turn needs from a window of events, folded onto a previous summary.

Pure: no I/O, no clock. Reads the events' structure, not a rendered
transcript: user text is an ask (and an open question while no agent text
follows it), agent text is a decision or answer, calls and responses become
one line per tool name, and calls without a response stay open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from projections.compaction.render import AUTH_FUNCTION_NAME
from schemas.event import Event, Part
from summarizer_worker.language import guess_language
from summarizer_worker.summary_text import (
    COUNT_PATTERN,
    Digest,
    Section,
    capped_count,
    clip,
    one_line,
    parse_summary,
)

#: Longest rendering of a call's arguments and of a response's key result.
ARGS_CHARS: Final = 80
RESULT_CHARS: Final = 100

SEED_AUTHOR: Final = "model"
USER_AUTHOR: Final = "user"
_QUESTION_MARKS: Final = ("?", "？", "؟", "¿")  # noqa: RUF001 (fullwidth on purpose)
_ASKED: Final = "asked: "
_PENDING: Final = "pending call: "
_PENDING_ITEM: Final = re.compile(r"^pending call: (?P<name>\S+)(?: \(id (?P<id>[^)]*)\))?$")
_TOOL_ITEM: Final = re.compile(
    rf"^(?P<name>\S+) \((?P<calls>{COUNT_PATTERN}) calls?\)(?:: (?P<detail>.*))?$"
)


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool as the summary lists it: exact name, call count, latest use."""

    name: str
    calls: int = 0
    args: str | None = None
    result: str | None = None
    detail: str | None = None
    """The line's text after the count as an earlier summary wrote it, kept
    verbatim while this window does not use the tool (it may be clipped)."""

    def item(self) -> str:
        """The tool's line: ``name (2 calls): {'a': 1} -> 42``."""
        count = f" ({self.calls} call{'' if self.calls == 1 else 's'})" if self.calls else ""
        if self.detail is not None:
            return f"{self.name}{count}: {self.detail}"
        if self.args is None and self.result is None:
            return f"{self.name}{count}"
        return f"{self.name}{count}: {self.args or '?'} -> {self.result or '(no response)'}"


def seed_text(window: Sequence[Event]) -> str | None:
    """The previous summary a rolling window starts with, if it has one.

    The seed is the first item, authored ``"model"`` (reference §5.4).
    """
    if not window or window[0].author != SEED_AUTHOR:
        return None
    return "\n".join(text for part in _parts(window[0]) if (text := _said(part)) is not None)


def _is_auth(parts: Sequence[Part]) -> bool:
    names = [p.function_call.name for p in parts if p.function_call is not None]
    names += [p.function_response.name for p in parts if p.function_response is not None]
    return AUTH_FUNCTION_NAME in names


def _parts(event: Event) -> Sequence[Part]:
    parts = event.content.parts if event.content is not None else None
    # Credential traffic is never summarized: its payload is a user secret.
    return () if not parts or _is_auth(parts) else parts


def _said(part: Part) -> str | None:
    # Thoughts are the agent's reasoning, not what it told the user.
    if part.thought or not part.text or not part.text.strip():
        return None
    return part.text


def _key_result(response: dict[str, Any] | None) -> str:
    # ADK wraps plain return values as {"result": ...}; errors as {"error": ...}.
    if response is None:
        return "None"
    if "result" in response:
        return str(response["result"])
    if "error" in response:
        return f"error: {response['error']}"
    return str(response)


def _is_question(text: str) -> bool:
    return any(mark in text for mark in _QUESTION_MARKS)


@dataclass(slots=True)
class _Pass:
    """The walk over one window; `extract` freezes it into a `Digest`."""

    requests: list[str]
    decisions: list[str]
    tools: dict[str, ToolUse]
    questions: list[tuple[int, str]]
    pending: dict[str, str]  # call id (or "name:<name>" without one) -> tool name
    responded: set[str]  # the ids and "name:<name>" keys of every response
    last_answer: int = -1

    def note_part(self, position: int, event: Event, part: Part) -> None:
        """Take one part of the event at `position` into account."""
        text = _said(part)
        if text is not None and event.author == USER_AUTHOR:
            self.requests.append(one_line(text))
            if _is_question(text):
                self.questions.append((position, one_line(text)))
        elif text is not None:
            self.decisions.append(f"{event.author}: {one_line(text)}")
            self.last_answer = position
        if (call := part.function_call) is not None and call.name:
            used = self.tools.pop(call.name, ToolUse(call.name))
            args = clip(one_line(str(call.args)), ARGS_CHARS)
            self.tools[call.name] = replace(used, calls=used.calls + 1, args=args, result=None)
            self.pending[call.id or f"name:{call.name}"] = call.name
        if (response := part.function_response) is not None and response.name:
            used = self.tools.pop(response.name, ToolUse(response.name))
            result = clip(one_line(_key_result(response.response)), RESULT_CHARS)
            self.tools[response.name] = replace(used, result=result)
            self.pending.pop(response.id or f"name:{response.name}", None)
            self.responded.update(filter(None, (response.id, f"name:{response.name}")))


def _walk(events: Sequence[Event]) -> _Pass:
    walk = _Pass(requests=[], decisions=[], tools={}, questions=[], pending={}, responded=set())
    for position, event in enumerate(events):
        for part in _parts(event):
            walk.note_part(position, event, part)
    return walk


def _tool_use(item: str) -> ToolUse:
    match = _TOOL_ITEM.match(item)
    if match is None:
        return ToolUse(name=item)
    detail = match.group("detail")
    args, _, result = (detail or "").partition(" -> ")
    return ToolUse(
        match.group("name"), int(match.group("calls")), args or None, result or None, detail
    )


def _merge_tools(earlier: Section, walk: _Pass) -> Section:
    # A tool used again moves to the end: the newest uses survive a cut.
    tools = {use.name: use for use in map(_tool_use, earlier.items)}
    for name, use in walk.tools.items():
        before = tools.pop(name, None)
        if before is not None and not use.calls:
            # Only a response here: its call is in the earlier summary.
            use = replace(use, args=before.args, result=use.result or before.result)
        calls = capped_count(use.calls + (before.calls if before else 0))
        tools[name] = replace(use, calls=calls)
    return Section(tuple(use.item() for use in tools.values()), earlier.omitted)


def _still_open(item: str, walk: _Pass) -> bool:
    if item.startswith(_ASKED):
        return walk.last_answer < 0  # any agent text after the summary answers it
    if (match := _PENDING_ITEM.match(item)) is not None:
        return (match.group("id") or f"name:{match.group('name')}") not in walk.responded
    return True


def _open_questions(earlier: Section, walk: _Pass) -> Section:
    kept = [item for item in earlier.items if _still_open(item, walk)]
    kept += [f"{_ASKED}{text}" for position, text in walk.questions if position > walk.last_answer]
    for key, name in walk.pending.items():
        shown = "" if key.startswith("name:") else f" (id {key})"
        kept.append(f"{_PENDING}{name}{shown}")
    return Section(tuple(kept), earlier.omitted)


def _extend(earlier: Section, items: list[str]) -> Section:
    return Section((*earlier.items, *items), earlier.omitted)


def extract(window: Sequence[Event]) -> Digest:
    """The digest of `window`, its rolling seed (if any) folded in.

    Example: a seed saying ``User requests: - Plan my day``, then user
    ``"Is Friday free?"``, a call ``get_calendar(day="fri")`` and its response
    ``{"result": "free"}``, no agent text -> requests ``Plan my day`` and
    ``Is Friday free?``, tools ``get_calendar (1 call): {'day': 'fri'} -> free``,
    open questions ``asked: Is Friday free?``.
    """
    seed = seed_text(window)
    earlier = parse_summary(seed) if seed is not None else Digest()
    events = window[1:] if seed is not None else window
    walk = _walk(events)
    return Digest(
        # The language of the session's start stays: one foreign message does
        # not make it the user's primary language.
        language=earlier.language or guess_language(walk.requests),
        earlier=earlier.earlier,
        requests=_extend(earlier.requests, walk.requests),
        decisions=_extend(earlier.decisions, walk.decisions),
        tools=_merge_tools(earlier.tools, walk),
        open_questions=_open_questions(earlier.open_questions, walk),
    )
