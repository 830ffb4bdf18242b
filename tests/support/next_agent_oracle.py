"""An oracle of the agent a read without one is for, written apart from the core.

It walks the live list back as ADK's router does (``Runner._find_agent_to_run``,
google-adk 2.13.0, an app that is not resumable), with every author but
``user`` taken for an agent of the app, and shares no code with
:mod:`projections.contents.next_agent`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from projections.contents.assembly import ContentsRequest
from projections.event_kinds import is_creation
from projections.fold.rebuild import effective_records
from projections.fold.rewind import drop_rewound
from schemas.event import Event, Part
from schemas.logged_event import LoggedEvent

_SEAL = "INVOCATION_ABORTED"


def _parts(event: Event) -> list[Part]:
    return list(event.content.parts or []) if event.content is not None else []


def _calls_id(event: Event, call_id: str) -> bool:
    return any(p.function_call is not None and p.function_call.id == call_id for p in _parts(event))


def _routed_to_caller(live: Sequence[Event]) -> str | None:
    """The caller a trailing user answer goes back to, None when rule 1 does not apply."""
    last = live[-1]
    newest_agent_event = next((e for e in reversed(live) if e.author != "user"), None)
    if last.error_code == _SEAL or (
        newest_agent_event is not None and newest_agent_event.error_code == _SEAL
    ):
        return None
    if last.author != "user":
        return None
    answers = [p.function_response for p in _parts(last) if p.function_response is not None]
    if not answers or not answers[0].id:
        return None
    caller = next((e for e in reversed(live[:-1]) if _calls_id(e, answers[0].id)), None)
    if caller is None or caller.author in ("", "user"):
        return None
    return caller.author


def expected_agent(live: Sequence[Event], root: str) -> str:
    """The agent ADK's router would run after the live events `live`; `root` when none replied."""
    if live:
        caller = _routed_to_caller(live)
        if caller is not None:
            return caller
    for event in reversed(live):
        if event.author in ("", "user") or event.error_code == _SEAL:
            continue
        if event.actions.agent_state is not None or event.actions.end_of_agent:
            continue
        if event.error_code and not _parts(event):
            continue
        return event.actions.transfer_to_agent or event.author
    return root


def expected_view_request(records: Iterable[LoggedEvent], root: ContentsRequest) -> ContentsRequest:
    """`root` (the request a projection starts with) for the agent its records' router picks."""
    effective = [record.envelope.event for record in effective_records(records)]
    # A creation record is ctxstream's bookkeeping: ADK's router never sees one.
    live = drop_rewound([event for event in effective if not is_creation(event)])
    return replace(root, agent_name=expected_agent(live, root.agent_name))
