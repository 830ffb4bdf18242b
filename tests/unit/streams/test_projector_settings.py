"""Per-tenant settings of the projector, checked against configs and contexts written here.

``compaction_overrides`` picks a session's compaction config by ``tenant/app``,
then ``tenant``, then the default; ``view_agent_names`` picks, by
``tenant/app``, the agent whose context a session's snapshots describe. The
expected configs are literals, and their effect on a batch is checked against
literal request ids (``printf '%s\\0%s\\0%s' KEY TRIGGER OFFSETS | sha256sum |
cut -c1-32``) and literal context fingerprints (the SHA-256 of the canonical
contents JSON written out by hand), never against the settings' own methods.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
import pytest

from projections.compaction.config import CompactionConfig
from projections.contents.contents_request import ContentsRequest
from schemas.codec import encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId
from streams.batch import BatchOutcome, BatchProjector, SessionCache, SourceRecord
from streams.projector_settings import ProjectorSettings, checked_events_partitions
from tests.support.fingerprints import fingerprint_of_text

DEFAULT: Final = CompactionConfig(compaction_interval=10, overlap_size=1)
EVERY_INVOCATION: Final = CompactionConfig(compaction_interval=1, overlap_size=0)
BY_TOKENS: Final = CompactionConfig(token_threshold=50_000, event_retention_size=10)
OVERRIDES: Final[dict[str, dict[str, int]]] = {
    "acme": {"compaction_interval": 1, "overlap_size": 0},
    "acme/support": {"token_threshold": 50_000, "event_retention_size": 10},
}
EXPECTED_CONFIGS: Final = [
    # tenant/app wins over tenant
    ("acme/support/u1/s1", BY_TOKENS),
    ("acme/support/u2/other", BY_TOKENS),
    # tenant alone, for every other app of the tenant
    ("acme/billing/u1/s1", EVERY_INVOCATION),
    ("acme/supportx/u1/s1", EVERY_INVOCATION),
    # neither: the default
    ("beta/support/u1/s1", DEFAULT),
    ("acme2/support/u1/s1", DEFAULT),
    ("support/acme/u1/s1", DEFAULT),
]


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COMPACTION", "COMPACTION_OVERRIDES", "VIEW_AGENT_NAMES"):
        monkeypatch.delenv(f"CTXSTREAM_{name}", raising=False)


@pytest.mark.parametrize(("key", "expected"), EXPECTED_CONFIGS)
def test_compaction_for_picks_tenant_app_then_tenant_then_the_default(
    key: str, expected: CompactionConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    settings = ProjectorSettings.model_validate({"compaction_overrides": OVERRIDES})
    assert settings.compaction_for(SessionKey(key)) == expected


def test_overrides_and_the_default_are_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clean_env(monkeypatch)
    monkeypatch.setenv("CTXSTREAM_COMPACTION_OVERRIDES", orjson.dumps(OVERRIDES).decode())
    monkeypatch.setenv("CTXSTREAM_COMPACTION", '{"compaction_interval": 4, "overlap_size": 2}')
    settings = ProjectorSettings()
    assert [settings.compaction_for(SessionKey(key)) for key, _ in EXPECTED_CONFIGS] == [
        BY_TOKENS,
        BY_TOKENS,
        EVERY_INVOCATION,
        EVERY_INVOCATION,
        *[CompactionConfig(compaction_interval=4, overlap_size=2)] * 3,
    ]


def test_without_overrides_every_session_gets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    settings = ProjectorSettings()
    assert {settings.compaction_for(SessionKey(key)) for key, _ in EXPECTED_CONFIGS} == {DEFAULT}


def test_an_override_is_a_whole_config_not_merged_with_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clean_env(monkeypatch)
    settings = ProjectorSettings.model_validate(
        {"compaction_overrides": {"acme": {"token_threshold": 7, "event_retention_size": 0}}}
    )
    config = settings.compaction_for(SessionKey("acme/app/u/s"))
    assert config.model_dump() == {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 7,
        "event_retention_size": 0,
        "owner": "pipeline",
    }


def test_view_request_for_names_the_agent_of_the_sessions_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clean_env(monkeypatch)
    monkeypatch.setenv(
        "CTXSTREAM_VIEW_AGENT_NAMES", '{"acme/support": "billing_agent", "beta/app": "root"}'
    )
    settings = ProjectorSettings()
    assert settings.view_request_for(SessionKey("acme/support/u1/s1")) == ContentsRequest(
        agent_name="billing_agent"
    )
    assert settings.view_request_for(SessionKey("beta/app/u9/s9")) == ContentsRequest(
        agent_name="root"
    )
    for other in ("acme/billing/u1/s1", "beta/support/u1/s1", "acme2/support/u1/s1"):
        assert settings.view_request_for(SessionKey(other)) == ContentsRequest()


# --- their effect on a batch -------------------------------------------------------------


def _record(key: str, offset: int, event: dict[str, Any]) -> SourceRecord:
    envelope = Envelope(
        tenant=TenantId(key.split("/", 1)[0]),
        session_key=SessionKey(key),
        producer_id="runner",
        idempotency_key=f"{key}#{offset}",
        event=Event.model_validate(event),
    )
    return SourceRecord("events", 0, offset, key.encode(), encode(envelope))


def _turns(key: str, first_offset: int) -> list[SourceRecord]:
    """inv1 (user, agent), then inv2's user event, which completes inv1."""
    script = [("inv1", "user", "hi"), ("inv1", "support_agent", "hello"), ("inv2", "user", "bye")]
    return [
        _record(
            key,
            first_offset + n,
            {
                "id": f"e{n}",
                "invocationId": invocation,
                "author": author,
                "timestamp": 100.0 + n,
                "content": {
                    "role": "user" if author == "user" else "model",
                    "parts": [{"text": text}],
                },
            },
        )
        for n, (invocation, author, text) in enumerate(script)
    ]


def _project(settings: ProjectorSettings, records: list[SourceRecord]) -> BatchOutcome:
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=1)
    return projector.project(records, lambda partition, key: None)


def test_the_batch_compacts_each_session_by_its_own_tenants_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clean_env(monkeypatch)
    settings = ProjectorSettings.model_validate({"compaction_overrides": OVERRIDES})
    records = [
        *_turns("acme/billing/u1/s1", 0),  # tenant override: every invocation
        *_turns("acme/support/u1/s1", 3),  # tenant/app override: tokens only
        *_turns("beta/billing/u1/s1", 6),  # default: every 10 invocations
    ]
    outcome = _project(settings, records)
    assert outcome.dead_letters == []
    assert [(r.session_key, r.request_id, r.event_offsets) for r, _ in outcome.requests] == [
        ("acme/billing/u1/s1", "b8d618041b9b5168a80ba3ff5218f9e0", (0, 1))
    ]


def _fingerprint(canonical: str) -> str:
    return fingerprint_of_text(canonical)


HI: Final = '{"parts":[{"text":"hi"}],"role":"user"}'
BYE: Final = '{"parts":[{"text":"bye"}],"role":"user"}'
AS_OWN_TURN: Final = _fingerprint(f'[{HI},{{"parts":[{{"text":"hello"}}],"role":"model"}},{BYE}]')


@pytest.mark.parametrize(
    ("view_agent_names", "fingerprint"),
    [
        ({}, AS_OWN_TURN),
        ({"acme/support": "support_agent"}, AS_OWN_TURN),
        # The root did not reply: support_agent did, and ADK's router runs it next.
        ({"acme/support": "billing_agent"}, AS_OWN_TURN),
        ({"acme/other": "billing_agent"}, AS_OWN_TURN),
    ],
    ids=["no-root", "the-replying-root", "a-root-that-did-not-reply", "another-app"],
)
def test_the_snapshot_describes_the_context_of_the_agent_that_runs_next(
    view_agent_names: dict[str, str], fingerprint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    settings = ProjectorSettings.model_validate({"view_agent_names": view_agent_names})
    outcome = _project(settings, _turns("acme/support/u1/s1", 0))
    [snapshot] = outcome.snapshots()
    assert (snapshot.context_items, snapshot.context_fingerprint) == (3, fingerprint)


def test_the_engine_is_native_unless_the_environment_says_faust(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CTXSTREAM_ENGINE", raising=False)
    assert ProjectorSettings().engine == "native"
    monkeypatch.setenv("CTXSTREAM_ENGINE", "faust")
    assert ProjectorSettings().engine == "faust"
    monkeypatch.setenv("CTXSTREAM_ENGINE", "kafka-streams")
    with pytest.raises(ValueError, match="engine") as refused:
        ProjectorSettings()
    assert "'native' or 'faust'" in str(refused.value)


def test_a_partition_count_other_than_the_settings_is_kept_and_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = ProjectorSettings(events_partitions=6)
    assert checked_events_partitions(settings, 6) == 6
    assert not caplog.records
    assert checked_events_partitions(settings, 12) == 12
    assert [r.getMessage() for r in caplog.records] == [
        "events has 12 partitions, settings say 6: records are checked against 12"
    ]
