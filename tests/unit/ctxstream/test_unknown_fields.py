"""The append door refuses fields no model knows, at any depth; the topic's decoder keeps them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from ctxstream.appends.event_records import event_record, event_records
from ctxstream.errors import InvalidEventError
from schemas.codec import decode_envelope
from schemas.event import Content, Event, Part
from schemas.unknown_fields import (
    MAX_SHOWN_NAME,
    _holds_models,
    unknown_fields,
    unknown_fields_refusal,
    unknown_top_fields,
)
from tests.unit.schemas.test_event import RECORDED

KEY = "acme/support/u1/s1"
FULL_DUMP = Path(__file__).parents[2] / "fixtures" / "adk-event-full-dump.json"


def _event(**fields: Any) -> dict[str, Any]:
    return {"id": "e1", "invocationId": "inv1", "author": "user", "timestamp": 1.0, **fields}


def test_the_trials_misspellings_are_refused_naming_each_by_its_path() -> None:
    misspelt = {
        "invocationID": "inv1",
        "author": "user",
        "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"txt": "hi"}]},
    }
    with pytest.raises(InvalidEventError) as refused:
        event_records(KEY, [_event(), misspelt], producer_id="p")
    assert str(refused.value) == (
        "events[1]: unknown field(s) invocationID (did you mean invocationId?), "
        "content.parts[0].txt (did you mean text?)"
    )


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"actions": {"stateDelta": {}, "transferToAgnet": "x"}}, "actions.transferToAgnet"),
        (
            {"content": {"parts": [{"text": "a"}, {"functionCall": {"name": "f", "arg": {}}}]}},
            "content.parts[1].functionCall.arg",
        ),
        (
            {"content": {"parts": [{"functionResponse": {"name": "f", "result": {}}}]}},
            "content.parts[0].functionResponse.result",
        ),
        ({"usageMetadata": {"promptTokens": 3}}, "usageMetadata.promptTokens"),
        ({"nodeInfo": {"path": "", "pth": "x"}}, "nodeInfo.pth"),
        ({"inputTranscription": {"txt": "x"}}, "inputTranscription.txt"),
        ({"content": {"role": "user", "part": []}}, "content.part"),
        (
            {
                "actions": {
                    "compaction": {
                        "startTimestamp": 0.0,
                        "endTimestamp": 1.0,
                        "compactedContent": {"parts": [{"text": "s", "bold": True}]},
                    }
                }
            },
            "actions.compaction.compactedContent.parts[0].bold",
        ),
    ],
)
def test_an_unknown_field_at_any_depth_is_refused(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidEventError, match="unknown field") as refused:
        event_record(KEY, _event(**fields), producer_id="p")
    assert f" {path}" in str(refused.value)


def test_free_form_values_are_not_looked_into() -> None:
    event = _event(
        customMetadata={"anything": {"goes": 1}},
        actions={"stateDelta": {"txt": 1}, "agentState": {"x": 1}},
        content={"parts": [{"functionCall": {"name": "f", "args": {"txt": "x"}}}]},
        groundingMetadata={"notAField": 1},
    )
    event_record(KEY, event, producer_id="p")


def test_snake_case_names_and_adks_unmodelled_fields_are_known() -> None:
    event = {
        "id": "e1",
        "invocation_id": "inv1",
        "author": "a",
        "timestamp": 1.0,
        "model_version": "m",
        "finishReason": "STOP",
        "content": {"parts": [{"text": "x", "video_metadata": None, "partMetadata": {}}]},
        "usage_metadata": {"prompt_token_count": 3, "thoughtsTokenCount": 1},
        "actions": {"route": "next", "set_model_response": None},
    }
    event_record(KEY, event, producer_id="p")


@pytest.mark.parametrize("spelling", ["by_alias", "by_name"])
def test_adks_full_dump_with_every_field_is_accepted(spelling: str) -> None:
    dump = json.loads(FULL_DUMP.read_text())[spelling]
    key, value = event_record(KEY, dump, producer_id="p")
    assert unknown_fields(decode_envelope(value, record_key=key).event) == []


def test_every_recorded_adk_event_is_accepted() -> None:
    refused = [(where, unknown) for where, event in RECORDED if (unknown := _unknown_of(event))]
    assert refused == []


def test_the_topic_decoder_keeps_unknown_fields() -> None:
    record = {
        "schema_version": 2,
        "tenant": "acme",
        "session_key": KEY,
        "producer_id": "newer",
        "idempotency_key": f"{KEY}/e1",
        "event": _event(futureField={"a": 1}, content={"parts": [{"text": "x", "newKind": 1}]}),
    }
    envelope = decode_envelope(orjson.dumps(record))
    assert envelope.event.model_extra == {"futureField": {"a": 1}}
    assert unknown_fields(envelope.event) == ["futureField", "content.parts[0].newKind"]


def test_a_long_list_of_unknown_fields_is_cut() -> None:
    with pytest.raises(InvalidEventError) as refused:
        event_record(KEY, _event(**{f"zz{n}": n for n in range(25)}), producer_id="p")
    assert str(refused.value).endswith(", and 15 more")


def _unknown_of(event: dict[str, Any]) -> list[str]:
    return unknown_fields(Event.model_validate(event))


def test_a_misspelt_required_field_is_named_beside_the_one_reported_missing() -> None:
    misspelt = {"id": "e1", "author": "user", "timestmp": 1.0, "invocationId": "inv1"}

    with pytest.raises(InvalidEventError) as refused:
        event_record(KEY, misspelt, producer_id="p")

    reason = str(refused.value)
    assert reason.startswith("invalid envelope: event.timestamp: Field required")
    assert reason.endswith("; unknown field(s) timestmp (did you mean timestamp?)")


def test_a_refused_event_with_only_known_fields_names_no_unknown_one() -> None:
    with pytest.raises(InvalidEventError) as refused:
        event_record(KEY, {"id": "e1", "author": "user"}, producer_id="p")

    assert "unknown" not in str(refused.value)


@pytest.mark.parametrize(("count", "ending"), [(10, "zz9"), (11, "zz9, and 1 more")])
def test_a_refusal_names_ten_fields_and_counts_the_rest(count: int, ending: str) -> None:
    unknown = [f"zz{n}" for n in range(count)]
    assert unknown_fields_refusal(unknown).endswith(ending)


def test_a_long_unknown_name_is_cut_in_the_reason() -> None:
    long = "q" * 200  # no longer than a log line's own limit: only the reason's cuts it
    cut = f"{'q' * MAX_SHOWN_NAME}..."
    assert _unknown_of(_event(**{long: 1})) == [cut]
    assert unknown_top_fields(Event, {"author": "user", long: 1}) == [cut]


def test_a_refused_event_does_not_take_its_snake_case_names_for_unknown() -> None:
    # Refused for the missing timestamp; invocation_id is ADK's population by name.
    assert unknown_top_fields(Event, {"id": "e1", "invocation_id": "i", "author": "u"}) == []


@pytest.mark.parametrize(
    ("annotation", "holds"),
    [(Part, True), (list[Part] | None, True), (Content | None, True), (str | None, False)],
)
def test_the_walk_goes_into_exactly_the_fields_that_hold_models(
    annotation: object, holds: bool
) -> None:
    assert _holds_models(annotation) is holds
