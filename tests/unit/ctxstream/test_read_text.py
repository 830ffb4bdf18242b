"""How ``ctxstream context`` and ``expand`` print contents and events: text for people, JSON."""

from __future__ import annotations

import orjson

from ctxstream.cli.text import contents_json, contents_text, events_json, events_text
from schemas.event import Content, Event
from tests.support.events import call, resp, summary_event, text_event


def test_contents_text_gives_each_content_its_role_and_each_part_a_line() -> None:
    contents = [
        Content.model_validate({"role": "user", "parts": [{"text": "Where is\nmy order?"}]}),
        Content.model_validate(
            {
                "role": "model",
                "parts": [
                    {"text": "checking", "thought": True},
                    call("c1", "lookup", {"order": 42}),
                ],
            }
        ),
        Content.model_validate({"role": "user", "parts": [resp("c1", "lookup", {"ok": 1})]}),
        Content.model_validate({"role": "model", "parts": [{"fileData": {"fileUri": "gs://a"}}]}),
        Content.model_validate({"role": "model"}),
    ]
    assert contents_text(contents) == (
        "[1] user\n"
        "    Where is\n"
        "    my order?\n"
        "[2] model\n"
        "    thought: checking\n"
        '    call lookup {"order":42}\n'
        "[3] user\n"
        '    response lookup {"ok":1}\n'
        "[4] model\n"
        '    {"fileData":{"fileUri":"gs://a"}}\n'
        "[5] model\n"
        "    (no parts)\n"
    )


def test_events_text_heads_each_event_with_its_time_author_invocation_and_id() -> None:
    events = [text_event("e1", "inv1", 100.5, "hi"), summary_event("s1", 100.0, 101.0, 102.0)]
    assert events_text(events) == (
        "@100.5 user invocation=inv1 id=e1\n    hi\n@102.0 user invocation=cmp-s1 id=s1\n"
        "    (no content)\n"
    )


def test_json_reads_back_equal() -> None:
    contents = [Content.model_validate({"role": "user", "parts": [{"text": "hi"}]})]
    line = contents_json(contents)
    assert line.endswith(b"\n")
    assert [Content.model_validate(item) for item in orjson.loads(line)] == contents
    events = [text_event("e1", "inv1", 100.5, "hi"), summary_event("s1", 100.0, 101.0, 102.0)]
    lines = events_json(events).splitlines()
    assert [Event.model_validate(orjson.loads(line)) for line in lines] == events
