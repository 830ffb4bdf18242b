"""The append door refuses NaN, infinities and values too deep for JSON by their path.

orjson writes NaN and infinities as ``null`` and gives up past ~254 levels with
``Recursion limit reached``: before the door walked the values, a NaN in a
free-form place (state, custom metadata, call arguments) was appended as
``null``, the caller's value silently changed, and a NaN timestamp was refused
as ``got None``.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from ctxstream.appends.event_records import event_record
from ctxstream.errors import InvalidEventError

KEY = "acme/support/u1/s1"


def _event(**fields: Any) -> dict[str, Any]:
    return {"id": "e1", "invocationId": "inv1", "author": "user", "timestamp": 1.0, **fields}


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    ("fields", "path", "shown"),
    [
        ({"timestamp": "NUMBER"}, "event.timestamp", "event.timestamp"),
        (
            {"actions": {"stateDelta": {"score": "NUMBER"}}},
            "event.actions.stateDelta.score",
            "event.actions.stateDelta.score",
        ),
        (
            {"customMetadata": {"a": ["NUMBER"]}},
            "event.customMetadata.a.0",
            "event.customMetadata.a.0",
        ),
        (
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "f", "args": {"n": "NUMBER"}}}],
                }
            },
            "event.content.parts.0.functionCall.args.n",
            "event.content.parts.0....(7 levels)....args.n",  # a long path keeps its ends
        ),
    ],
)
def test_a_non_finite_number_is_refused_by_its_path_not_written_as_null(
    fields: dict[str, Any], path: str, shown: str, number: float
) -> None:
    text = orjson.dumps(_event(**fields)).decode()
    event = orjson.loads(text.replace('"NUMBER"', "0"))
    _put(event, path.split(".")[1:], number)
    with pytest.raises(InvalidEventError) as refused:
        event_record(KEY, event, producer_id="p")
    assert str(refused.value) == f"{shown}: number is not finite"


def _put(value: Any, keys: list[str], number: float) -> None:
    for key in keys[:-1]:
        value = value[int(key)] if isinstance(value, list) else value[key]
    last = keys[-1]
    if isinstance(value, list):
        value[int(last)] = number
    else:
        value[last] = number


@pytest.mark.parametrize("depth", [70, 300, 900])
def test_a_value_too_deep_is_refused_naming_the_bound(depth: int) -> None:
    with pytest.raises(InvalidEventError) as refused:
        event_record(KEY, _event(customMetadata={"x": _nested(depth)}), producer_id="p")
    reason = str(refused.value)
    assert reason.startswith("event.customMetadata.x.")
    assert reason.endswith("nested deeper than 64 levels")


def test_a_null_the_caller_gave_is_kept() -> None:
    _, value = event_record(KEY, _event(customMetadata={"x": None}), producer_id="p")
    assert orjson.loads(value)["event"]["customMetadata"] == {"x": None}
