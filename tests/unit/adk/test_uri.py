"""The ``ctxstream://`` URI: what it names, and each refusal's message."""

from __future__ import annotations

import pytest

from ctxstream.adk.uri import ServiceUri, parse_uri, read_model_location


def test_a_full_uri() -> None:
    uri = "ctxstream://10.0.0.1:9092,broker-2.local:9093/?tenant=acme&prefix=prod.ctx&view=live"
    assert parse_uri(uri) == ServiceUri(
        "10.0.0.1:9092,broker-2.local:9093", "acme", "prod.ctx", "live"
    )


def test_defaults() -> None:
    assert parse_uri("ctxstream://127.0.0.1:9092?tenant=t") == ServiceUri("127.0.0.1:9092", "t")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("postgresql://h:1/?tenant=t", "scheme 'postgresql'"),
        ("ctxstream://user:pw@h:1/?tenant=t", "credentials"),
        ("ctxstream://h:1/?tenant=t&password=x", "'password' looks like a secret"),
        ("ctxstream://h:1/?tenant=t&api_key=x", "'api_key' looks like a secret"),
        ("ctxstream://h:1/?tenant=t&dsn=x", "'dsn' looks like a secret"),
        ("ctxstream://h:1/?tenant=t&colour=red", "unknown parameter 'colour'"),
        ("ctxstream://h:1/?tenant=t&tenant=u", "'tenant' is given twice"),
        ("ctxstream://h:1/", "tenant parameter is required"),
        ("ctxstream://h:1/?tenant=a/b", "tenant 'a/b' is refused"),
        ("ctxstream://h:1/?tenant=t&view=partial", "view 'partial'"),
        ("ctxstream://h:1/?tenant=t&prefix=a b", "prefix 'a b'"),
        ("ctxstream://h/?tenant=t", "broker 'h' is not HOST:PORT"),
        ("ctxstream://h:1/db?tenant=t", "unexpected path '/db'"),
    ],
)
def test_refusals_name_what_was_wrong(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_uri(uri)


def test_read_model_location_from_the_environment() -> None:
    assert read_model_location({"CTXSTREAM_POSTGRES_DSN": "postgresql://x/db"}) == (
        "postgresql://x/db",
        "ctxstream",
    )
    env = {"CTXSTREAM_POSTGRES_DSN": "postgresql://x/db", "CTXSTREAM_SINK_SCHEMA": "rm"}
    assert read_model_location(env) == ("postgresql://x/db", "rm")
    with pytest.raises(ValueError, match="CTXSTREAM_POSTGRES_DSN is not set"):
        read_model_location({})
