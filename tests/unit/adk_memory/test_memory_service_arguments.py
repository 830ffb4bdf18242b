"""``MemoryService``'s constructor: what ADK's registry passes is taken, bad input refused by name.

Nothing connects at construction, so no broker and no database are needed here.
"""

from __future__ import annotations

import pytest

from ctxstream.adk import MemoryService

URI = "ctxstream://127.0.0.1:9/?tenant=acme&prefix=demo"


async def test_the_registrys_keyword_arguments_are_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", "postgresql://nobody@127.0.0.1:9/none")
    service = MemoryService(uri=URI, agents_dir="/agents")
    await service.close()


@pytest.mark.parametrize(
    ("uri", "environment", "message"),
    [
        ("memory://", {"CTXSTREAM_POSTGRES_DSN": "postgresql://x"}, "scheme 'memory'"),
        (URI + "&password=p", {"CTXSTREAM_POSTGRES_DSN": "postgresql://x"}, "looks like a secret"),
        (URI, {}, "CTXSTREAM_POSTGRES_DSN is not set"),
    ],
)
def test_a_bad_uri_or_a_missing_dsn_is_refused_by_name(
    uri: str, environment: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CTXSTREAM_POSTGRES_DSN", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        MemoryService(uri)


def test_a_wait_for_the_sink_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", "postgresql://x")
    with pytest.raises(ValueError, match="sink_wait_s: 0, expected more than 0 seconds"):
        MemoryService(URI, sink_wait_s=0)
