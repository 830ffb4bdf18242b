"""The snapshot's context fingerprint moves exactly when the assembled context does.

A subscriber reads ``context_fingerprint`` to know whether the context an
agent would send changed, so it must change with every visible part of the
assembled contents (texts, roles, parts of each type, calls, responses,
summaries, other agents' quoted events) and with nothing else (ids,
timestamps that keep the order, usage, state, partial chunks, other
branches, masked events). Each pair below edits one thing of a hand-written
session, checks what ``build_contents`` (the oracle, which knows nothing of
fingerprints) says about it, and requires the fingerprint of the projected
snapshot to agree. The property then does the same for generated sessions
and random edits: fingerprints equal iff the assembled contents are.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.contents.assembly import ContentsRequest, build_contents
from projections.contents.snapshot import compaction_boundary, context_fingerprint, to_snapshot
from projections.fold.projection import empty_projection, project
from projections.fold.rebuild import rebuild_contents
from schemas.event import Content, Event, content_to_json
from schemas.logged_event import LoggedEvent
from tests.support.events import SESSION, logged, logged_event, text_event
from tests.support.next_agent_oracle import expected_view_request
from tests.support.strategies import SCOPE, core_sessions, view_requests

Json = dict[str, Any]
Edit = Callable[[list[Json]], None]

#: The view of every hand-written pair: agent ``root`` on branch ``root``.
VIEW: Final = ContentsRequest(agent_name="root", current_branch="root")


def _text(text: str, **fields: Any) -> Json:
    return {"text": text, **fields}


def _event(
    event_id: str,
    invocation: str,
    author: str,
    timestamp: float,
    parts: list[Json] | None,
    *,
    role: str | None = None,
    **fields: Any,
) -> Json:
    data: Json = {
        "id": event_id,
        "invocation_id": invocation,
        "author": author,
        "timestamp": timestamp,
        **fields,
    }
    if parts is not None:
        data["content"] = {
            "role": role or ("user" if author == "user" else "model"),
            "parts": parts,
        }
    return data


def _tool_session() -> list[Json]:
    """Two invocations of ``root``: a tool call, every part type, and a helper on its branch."""
    root: Json = {"branch": "root"}
    return [
        _event("e1", "inv1", "user", 1.0, [_text("find the report")], actions={"state_delta": {}}),
        _event(
            "e2",
            "inv1",
            "root",
            2.0,
            [
                _text("looking"),
                {"function_call": {"id": "c1", "name": "search", "args": {"q": "report"}}},
            ],
            usage_metadata={"prompt_token_count": 120, "candidates_token_count": 7},
            **root,
        ),
        _event(
            "e3",
            "inv1",
            "root",
            3.0,
            [{"function_response": {"id": "c1", "name": "search", "response": {"hit": "r.pdf"}}}],
            role="user",
            **root,
        ),
        _event(
            "e4",
            "inv1",
            "root",
            4.0,
            [
                _text("hmm", thought=True, thought_signature="c2lnMQ=="),
                _text("here it is"),
                {"inline_data": {"mime_type": "image/png", "data": "iVBORw0K"}},
                {"file_data": {"file_uri": "gs://bucket/r.pdf", "mime_type": "application/pdf"}},
            ],
            **root,
        ),
        _event(
            "e5",
            "inv1",
            "root",
            5.0,
            [
                {"executable_code": {"language": "PYTHON", "code": "print(1)"}},
                {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "1"}},
            ],
            **root,
        ),
        _event("e6", "inv2", "user", 6.0, [_text("thanks")]),
        # Another branch: the view of `root` on branch `root` does not see it.
        _event("e7", "inv2", "helper", 7.0, [_text("helper notes")], branch="root.helper"),
        _event(
            "e8",
            "inv2",
            "root",
            8.0,
            [
                {"function_call": {"id": "adk-9", "name": "clock", "args": {}}},
            ],
            **root,
        ),
        _event(
            "e9",
            "inv2",
            "root",
            9.0,
            [{"function_response": {"id": "adk-9", "name": "clock", "response": {"t": "noon"}}}],
            role="user",
            **root,
        ),
        _event("e10", "inv2", "root", 10.0, [_text("you are welcome")], **root),
    ]


def _summarized_session() -> list[Json]:
    """Five raw events and a summary over [1, 2], shown at 2 (masking sorts by timestamp)."""
    summary = _event(
        "s1",
        "cmp-1",
        "user",
        6.0,
        None,
        actions={
            "compaction": {
                "start_timestamp": 1.0,
                "end_timestamp": 2.0,
                "compacted_content": {"role": "model", "parts": [_text("a then b")]},
            }
        },
    )
    return [
        _event("m1", "inv1", "user", 1.0, [_text("a")]),
        _event("m2", "inv1", "root", 2.0, [_text("b")], branch="root"),
        _event("m3", "inv2", "user", 3.0, [_text("c")]),
        _event("m4", "inv2", "root", 4.0, [_text("d")], branch="root"),
        _event("m5", "inv2", "user", 5.0, [_text("e")]),
        summary,
        _event("m6", "inv3", "user", 7.0, [_text("f")]),
    ]


def _records(events: list[Json]) -> list[LoggedEvent]:
    """`events` at offsets 10, 12, 14, ... (a partition shared with other sessions)."""
    validated = [Event.model_validate(event) for event in events]
    return logged(validated, [10 + 2 * index for index in range(len(validated))])


def _fingerprint(records: list[LoggedEvent], request: ContentsRequest = VIEW) -> str:
    """The fingerprint the projector publishes: the snapshot of the folded session."""
    projection = project(SESSION, records, start=empty_projection(SESSION, request))
    return to_snapshot(projection).context_fingerprint


def _oracle(records: list[LoggedEvent], request: ContentsRequest = VIEW) -> list[Json]:
    """The assembled contents as JSON, from the records alone (no projection, no fingerprint)."""
    return [content_to_json(content) for content in rebuild_contents(records, request)]


def _part(events: list[Json], event_id: str, index: int) -> Json:
    event = next(event for event in events if event["id"] == event_id)
    part: Json = event["content"]["parts"][index]
    return part


def _by_id(events: list[Json], event_id: str) -> Json:
    return next(event for event in events if event["id"] == event_id)


def _set(event_id: str, **fields: Any) -> Edit:
    def edit(events: list[Json]) -> None:
        _by_id(events, event_id).update(fields)

    return edit


def _set_part(event_id: str, index: int, path: tuple[str, ...], value: Any) -> Edit:
    """Set ``part[path[0]]...[path[-1]] = value`` of one part."""

    def edit(events: list[Json]) -> None:
        target = _part(events, event_id, index)
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _parts(event_id: str, change: Callable[[list[Json]], list[Json]]) -> Edit:
    def edit(events: list[Json]) -> None:
        content = _by_id(events, event_id)["content"]
        content["parts"] = change(content["parts"])

    return edit


def _rename_call(old: str, new: str) -> Edit:
    """Rename a call id in its call and its response alike (they stay paired)."""

    def edit(events: list[Json]) -> None:
        for event in events:
            for part in event.get("content", {}).get("parts", []):
                for kind in ("function_call", "function_response"):
                    if part.get(kind, {}).get("id") == old:
                        part[kind]["id"] = new

    return edit


def _insert(after: str, event: Json) -> Edit:
    def edit(events: list[Json]) -> None:
        events.insert(events.index(_by_id(events, after)) + 1, event)

    return edit


def _remove(event_id: str) -> Edit:
    def edit(events: list[Json]) -> None:
        events.remove(_by_id(events, event_id))

    return edit


def _set_range(start: float, end: float) -> Edit:
    def edit(events: list[Json]) -> None:
        compaction = _by_id(events, "s1")["actions"]["compaction"]
        compaction.update(start_timestamp=start, end_timestamp=end)

    return edit


TOOLS: Final = _tool_session
SUMMARIZED: Final = _summarized_session

VISIBLE: Final[dict[str, tuple[Callable[[], list[Json]], Edit]]] = {
    "a user's text": (TOOLS, _set_part("e1", 0, ("text",), "find the memo")),
    "the agent's text": (TOOLS, _set_part("e10", 0, ("text",), "bye")),
    "a role": (TOOLS, lambda events: _by_id(events, "e6")["content"].update(role="model")),
    "a part added": (TOOLS, _parts("e10", lambda parts: [*parts, _text("anything else?")])),
    "a part removed": (TOOLS, _parts("e4", lambda parts: parts[:-1])),
    "parts reordered": (TOOLS, _parts("e4", lambda parts: [parts[1], parts[0], *parts[2:]])),
    "an event added": (TOOLS, _insert("e6", _event("x1", "inv2", "user", 6.5, [_text("+")]))),
    "an event removed": (TOOLS, _remove("e6")),
    "a call's args": (TOOLS, _set_part("e2", 1, ("function_call", "args"), {"q": "memo"})),
    "a call's name": (TOOLS, _set_part("e2", 1, ("function_call", "name"), "find")),
    "a call's id": (TOOLS, _rename_call("c1", "c7")),
    "a client call id kept for the model": (TOOLS, _rename_call("adk-9", "adk-10")),
    "a response": (TOOLS, _set_part("e3", 0, ("function_response", "response"), {"hit": "-"})),
    "a thought's text": (TOOLS, _set_part("e4", 0, ("text",), "well")),
    "a thought flag": (TOOLS, _set_part("e4", 1, ("thought",), True)),
    "a thought signature": (TOOLS, _set_part("e4", 0, ("thought_signature",), "c2lnMg==")),
    "inline data": (TOOLS, _set_part("e4", 2, ("inline_data", "data"), "R0lGODlh")),
    "inline data's mime type": (TOOLS, _set_part("e4", 2, ("inline_data", "mime_type"), "x/y")),
    "file data": (TOOLS, _set_part("e4", 3, ("file_data", "file_uri"), "gs://bucket/q.pdf")),
    "executable code": (TOOLS, _set_part("e5", 0, ("executable_code", "code"), "print(2)")),
    "a code execution result": (
        TOOLS,
        _set_part("e5", 1, ("code_execution_result", "output"), "2"),
    ),
    "another agent's event becoming visible (quoted)": (TOOLS, _set("e7", branch="root")),
    "a summary's text": (
        SUMMARIZED,
        lambda events: _by_id(events, "s1")["actions"]["compaction"].update(
            compacted_content={"role": "model", "parts": [_text("b then a")]}
        ),
    ),
    "a summary's range masking one more event": (SUMMARIZED, _set_range(1.0, 3.0)),
    "a summary's range masking one event less": (SUMMARIZED, _set_range(1.5, 2.0)),
    "a summary removed": (SUMMARIZED, _remove("s1")),
    "a timestamp that reorders (masking sorts)": (SUMMARIZED, _set("m4", timestamp=5.5)),
}

INVISIBLE: Final[dict[str, tuple[Callable[[], list[Json]], Edit]]] = {
    "an event's id": (TOOLS, _set("e10", id="e10-renamed")),
    "a timestamp that keeps the order": (TOOLS, _set("e10", timestamp=10.5)),
    "a timestamp that keeps the order (masking sorts)": (SUMMARIZED, _set("m4", timestamp=4.5)),
    "an invocation id": (TOOLS, _set("e10", invocation_id="inv9")),
    "usage metadata": (TOOLS, _set("e2", usage_metadata={"prompt_token_count": 999})),
    "usage metadata added": (TOOLS, _set("e10", usage_metadata={"candidates_token_count": 3})),
    "a state delta": (TOOLS, _set("e1", actions={"state_delta": {"app:theme": "dark"}})),
    "custom metadata": (TOOLS, _set("e10", custom_metadata={"trace": "t-1"})),
    "a partial event": (
        TOOLS,
        _insert("e9", _event("p1", "inv2", "root", 9.5, [_text("you")], partial=True)),
    ),
    "a client call id stripped for the model": (TOOLS, _rename_call("adk-9", "adk-10")),
    "an event of a branch the view does not see": (TOOLS, _set_part("e7", 0, ("text",), "other")),
    "an event of a branch the view does not see, added": (
        TOOLS,
        _insert("e7", _event("x2", "inv2", "helper", 7.5, [_text("more")], branch="root.helper")),
    ),
    "a masked event's text": (SUMMARIZED, _set_part("m1", 0, ("text",), "A")),
    "a masked event removed": (SUMMARIZED, _remove("m2")),
    "a summary's range moved without masking more or less": (SUMMARIZED, _set_range(0.5, 2.5)),
    "a summary's id and invocation": (SUMMARIZED, _set("s1", id="s9", invocation_id="cmp-9")),
}

# Both client-id pairs edit the same thing: whether the model sees it depends on the request.
_PRESERVING: Final = ContentsRequest(
    agent_name="root", current_branch="root", preserve_function_call_ids=True
)


def _request_for(case: str) -> ContentsRequest:
    return _PRESERVING if case == "a client call id kept for the model" else VIEW


def _pair(session: Callable[[], list[Json]], edit: Edit) -> tuple[list[LoggedEvent], ...]:
    before = session()
    after = copy.deepcopy(before)
    edit(after)
    assert after != before, "the edit changed nothing"
    return _records(before), _records(after)


@pytest.mark.parametrize("case", sorted(VISIBLE))
def test_a_visible_change_changes_the_fingerprint(case: str) -> None:
    before, after = _pair(*VISIBLE[case])
    request = _request_for(case)
    assert _oracle(before, request) != _oracle(after, request), "the oracle sees no change"
    assert _fingerprint(before, request) != _fingerprint(after, request)


@pytest.mark.parametrize("case", sorted(INVISIBLE))
def test_an_invisible_change_keeps_the_fingerprint(case: str) -> None:
    before, after = _pair(*INVISIBLE[case])
    request = _request_for(case)
    assert _oracle(before, request) == _oracle(after, request), "the oracle sees a change"
    assert _fingerprint(before, request) == _fingerprint(after, request)


def test_the_hand_written_sessions_show_every_part_type() -> None:
    # The pairs above mean something only if these parts reach the contents.
    tools = _oracle(_records(_tool_session()))
    kinds = {key for content in tools for part in content["parts"] for key in part}
    assert kinds >= {
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "functionResponse",
        "inlineData",
        "fileData",
        "executableCode",
        "codeExecutionResult",
    }
    quoted = _oracle(_pair(TOOLS, _set("e7", branch="root"))[1])
    assert any("helper notes" in str(content) for content in quoted)
    summarized = _oracle(_records(_summarized_session()))
    assert [content["parts"][0]["text"] for content in summarized] == [
        "a then b",
        "c",
        "d",
        "e",
        "f",
    ]


def test_a_redelivered_record_keeps_the_fingerprint() -> None:
    records = _records(_tool_session())
    again = [*records[:5], LoggedEvent(records[4].offset, records[4].envelope), *records[5:]]
    assert _fingerprint(again) == _fingerprint(records)


def test_the_snapshot_fingerprints_the_view_contents() -> None:
    records = _records(_tool_session())
    contents = build_contents([record.envelope.event for record in records], VIEW)
    assert _fingerprint(records) == context_fingerprint(contents)
    snapshot = to_snapshot(project(SESSION, records, start=empty_projection(SESSION, VIEW)))
    assert snapshot.context_items == len(contents) == 9


def test_the_canonical_form_is_fixed() -> None:
    # Subscribers compare fingerprints across releases: the canonical JSON is a wire format.
    # Keys sorted, compact separators, non-ASCII kept as UTF-8, None fields left out.
    content = Content.model_validate({"role": "user", "parts": [{"text": "café", "thought": None}]})
    canonical = '[{"parts":[{"text":"café"}],"role":"user"}]'
    digest = hashlib.sha256(canonical[1:-1].encode()).digest()
    assert context_fingerprint([content]) == hashlib.sha256(digest).hexdigest()
    # Computed once with hashlib from the canonical text above.
    assert context_fingerprint([content]) == (
        "c2f01be6ebd43cc04a633b3dc3591271e7812a35b7c4ebb75fe173e6f5feb2e6"
    )
    assert context_fingerprint([]) == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


# -- the property: fingerprints equal iff the assembled contents are ------------------------


#: Edits of one event: the first ones mostly change what a view sees, the others mostly not.
_EDITS: Final = (
    *("text", "text", "text", "role", "role", "drop", "drop", "swap", "swap"),
    *("author", "branch", "timestamp", "scope"),
    *("id", "invocation", "usage", "state", "partial"),
)


def _edited(data: st.DataObject, records: list[LoggedEvent]) -> list[LoggedEvent]:
    """`records` with one random edit, visible or not, at the same offsets."""
    draw = data.draw
    events = [record.envelope.event for record in records]
    offsets = [int(record.offset) for record in records]
    # Half the time one of the last events: those a summary has not masked yet.
    first = draw(st.sampled_from((0, max(0, len(events) - 3))))
    index = draw(st.integers(first, len(events) - 1))
    event = events[index]
    fields = event.model_dump(exclude_unset=True)
    match draw(st.sampled_from(_EDITS)):
        case "text" if event.content is not None:
            fields["content"]["parts"] = [*(fields["content"].get("parts") or []), {"text": "+"}]
        case "role" if event.content is not None:
            fields["content"]["role"] = "model" if event.content.role == "user" else "user"
        case "drop" if len(events) > 1:
            del events[index], offsets[index]
            return logged(events, offsets)
        case "swap" if index + 1 < len(events):
            events[index], events[index + 1] = events[index + 1], events[index]
            return logged(events, offsets)
        case "author":
            fields["author"] = draw(st.sampled_from(("user", "root", "helper", "critic")))
        case "branch":
            fields["branch"] = draw(st.sampled_from((None, "root", "root.helper", "root.critic")))
        case "timestamp":
            fields["timestamp"] = event.timestamp + draw(st.sampled_from((-1.5, -0.25, 0.25, 1.5)))
        case "scope":
            fields["isolation_scope"] = None if event.isolation_scope else SCOPE
        case "invocation":
            fields["invocation_id"] = draw(st.sampled_from(("inv1", "inv2", "inv-x", "")))
        case "usage":
            fields["usage_metadata"] = {"prompt_token_count": draw(st.integers(0, 9000))}
        case "state":
            fields.setdefault("actions", {})["state_delta"] = {"mode": draw(st.integers(0, 9))}
        case "partial":
            fields["partial"] = True
        case _:  # the id, or an edit that does not apply to this event
            fields["id"] = f"{event.id}-x"
    events[index] = Event.model_validate(fields)
    return logged(events, offsets)


@pytest.mark.core_property
@settings(deadline=None)
@given(core_sessions(refusals=True), view_requests(), st.data())
def test_fingerprints_are_equal_exactly_when_the_assembled_contents_are(
    log: list[LoggedEvent], request: ContentsRequest, data: st.DataObject
) -> None:
    # Mostly the same session with one to three edits; now and then another session.
    other = log
    for _ in range(data.draw(st.integers(1, 3))):
        other = _edited(data, other)
    if data.draw(st.integers(0, 9)) == 0:
        other = data.draw(core_sessions(refusals=True))
    # Each snapshot describes the view of the agent its own records' router runs next.
    same_contents = _oracle(log, expected_view_request(log, request)) == _oracle(
        other, expected_view_request(other, request)
    )
    assert (_fingerprint(log, request) == _fingerprint(other, request)) == same_contents


def test_a_boundary_needs_a_summary_record() -> None:
    record = logged_event(SESSION, text_event("q1", "i1", 1.0), 12)
    with pytest.raises(ValueError, match=r"^event 'q1' at offset 12 is not a summary event$"):
        compaction_boundary(record)
