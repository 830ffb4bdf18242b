"""Old records still decode: each released version keeps a golden file."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas.codec import decode_envelope, encode
from schemas.upcasters import UnknownSchemaVersionError, upcast

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_v1_envelope_is_lifted_to_v2() -> None:
    raw = (FIXTURES / "envelope-v1.json").read_bytes()
    envelope = decode_envelope(raw)
    assert envelope.schema_version == 2
    assert envelope.tenant == "acme"
    assert envelope.event.actions.state_delta == {"counter": 1}
    written = orjson.loads(encode(envelope))
    assert written["schema_version"] == 2
    assert written["event"] == orjson.loads(raw)["event"]


def test_a_record_without_a_version_is_read_as_v1() -> None:
    lifted = upcast("envelope", {"session_key": "t/a/u/s"})
    assert lifted == {"session_key": "t/a/u/s", "schema_version": 2, "tenant": "t"}


def test_a_version_from_the_future_is_refused() -> None:
    with pytest.raises(UnknownSchemaVersionError, match=r"this reader knows 1\.\.1"):
        upcast("dead_letter", {"schema_version": 2})


def test_a_current_record_is_returned_unchanged() -> None:
    record = {"schema_version": 2, "tenant": "t"}
    assert upcast("envelope", record) is record


def test_a_newer_version_is_refused_with_what_to_do() -> None:
    with pytest.raises(UnknownSchemaVersionError) as caught:
        upcast("envelope", {"schema_version": 3})
    assert str(caught.value) == (
        "unknown schema_version 3 for envelope (this reader knows 1..2); "
        "deploy the newer reader first"
    )


def test_a_v1_envelope_without_a_string_session_key_is_refused() -> None:
    with pytest.raises(TypeError) as caught:
        upcast("envelope", {"schema_version": 1, "session_key": 7})
    assert str(caught.value) == "v1 envelope without a string session_key"


def test_a_missing_upcaster_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "schemas.upcasters.UPCASTERS",
        {"envelope": {}, "compaction_request": {}, "projection_snapshot": {}, "dead_letter": {}},
    )
    with pytest.raises(UnknownSchemaVersionError) as caught:
        upcast("envelope", {"schema_version": 1, "session_key": "t/a/u/s"})
    assert str(caught.value) == "no upcaster for envelope schema_version 1"
