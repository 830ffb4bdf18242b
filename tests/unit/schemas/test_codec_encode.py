"""`encode` writes with pydantic-core's serializer exactly what orjson writes of the JSON dump.

The oracle is the encoding the topics were written with before:
``orjson.dumps(record.model_dump(mode="json", by_alias=True, exclude_none=True))``.
Golden files pin a few records byte for byte (test_wire_golden); these tests
hold the two encoders equal over generated texts, floats and free-form values.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from schemas.codec import encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.json_bounds import INT64_MAX, INT64_MIN
from schemas.keys import SessionKey, TenantId
from tests.unit.schemas.test_codec_hostile import _PROPERTY, _valid_records


def _dumped(record: BaseModel) -> bytes:
    return orjson.dumps(record.model_dump(mode="json", by_alias=True, exclude_none=True))


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(INT64_MIN, INT64_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=15,
)


@_PROPERTY
@given(
    timestamp=st.floats(allow_nan=False, allow_infinity=False),
    text=st.text(),
    metadata=st.dictionaries(st.text(max_size=5), _json, max_size=3),
    extra=_json,
)
def test_an_envelope_is_encoded_as_orjson_dumps_it(
    timestamp: float, text: str, metadata: dict[str, Any], extra: object
) -> None:
    event = Event.model_validate(
        {
            "author": text,
            "timestamp": timestamp,
            "customMetadata": metadata,
            "modelVersion": extra,
            "content": {"parts": [{"text": text}]},
        }
    )
    envelope = Envelope(
        tenant=TenantId("a"),
        session_key=SessionKey("a/b/c/d"),
        producer_id="p",
        idempotency_key="i",
        event=event,
    )
    assert encode(envelope) == _dumped(envelope)


@pytest.mark.parametrize(("kind", "record"), sorted(_valid_records().items()))
def test_every_kind_of_record_is_encoded_as_orjson_dumps_it(kind: str, record: BaseModel) -> None:
    assert encode(record) == _dumped(record)
