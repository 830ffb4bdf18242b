"""Who compacts an app: the ``owner`` of a compaction entry, its parsing and its effect.

The expected configs, decisions and log lines are literals written here; the
batch's effect is checked on a workload that decides a request under pipeline
ownership (so "no request" under ``adk`` is not an empty workload's answer).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import orjson
import pytest
from pydantic import ValidationError

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions
from projections.compaction.ownership import conflicting_summary, pipeline_compacts
from projections.compaction.summary_request import with_summary_request_id
from schemas.codec import encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey, TenantId
from schemas.logged_event import LoggedEvent
from streams.batch import BatchOutcome, BatchProjector, SessionCache, SourceRecord
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings

EVERY_INVOCATION: Final = {"compaction_interval": 1, "overlap_size": 0}
KEY: Final = SessionKey("acme/support/u1/s1")


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COMPACTION", "COMPACTION_OVERRIDES"):
        monkeypatch.delenv(f"CTXSTREAM_{name}", raising=False)


def _settings(overrides: dict[str, Any]) -> ProjectorSettings:
    return ProjectorSettings.model_validate({"compaction_overrides": overrides})


# --- parsing -------------------------------------------------------------------------------


def test_owner_defaults_to_the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    settings = _settings({"acme": EVERY_INVOCATION})
    assert settings.compaction_for(KEY).owner == "pipeline"
    assert settings.compaction.owner == "pipeline"


def test_adk_ownership_alone_is_an_entry_without_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    monkeypatch.setenv(
        "CTXSTREAM_COMPACTION_OVERRIDES",
        orjson.dumps({"acme/support": {"owner": "adk"}, "acme": EVERY_INVOCATION}).decode(),
    )
    settings = ProjectorSettings()
    assert settings.compaction_for(KEY).model_dump() == {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": None,
        "event_retention_size": None,
        "owner": "adk",
    }
    assert settings.compaction_for(SessionKey("acme/billing/u1/s1")).owner == "pipeline"
    assert settings.compaction_entry(KEY) == "acme/support"
    assert settings.compaction_entry(SessionKey("acme/billing/u1/s1")) == "acme"
    assert settings.compaction_entry(SessionKey("beta/support/u1/s1")) == "(default)"


def test_adk_ownership_keeps_triggers_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    settings = _settings({"acme/support": {**EVERY_INVOCATION, "owner": "adk"}})
    config = settings.compaction_for(KEY)
    assert (config.owner, config.compaction_interval, config.overlap_size) == ("adk", 1, 0)


@pytest.mark.parametrize("owner", ["ADK", "runner", "", None, 1])
def test_a_bad_owner_is_refused_at_start_naming_the_entry_and_the_values(
    owner: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    entry = {**EVERY_INVOCATION, "owner": owner}
    monkeypatch.setenv("CTXSTREAM_COMPACTION_OVERRIDES", orjson.dumps({"acme": entry}).decode())
    with pytest.raises(ValidationError) as raised:
        ProjectorSettings()
    message = str(raised.value)
    assert "compaction_overrides.acme.owner" in message
    assert "'adk' or 'pipeline'" in message


def test_pipeline_ownership_still_needs_a_trigger(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    with pytest.raises(ValidationError, match="no compaction trigger"):
        _settings({"acme": {"owner": "pipeline"}})
    with pytest.raises(ValidationError, match="overlap_size"):
        _settings({"acme": {"owner": "adk", "compaction_interval": 3}})


# --- the decision ---------------------------------------------------------------------------


def _event(n: int, invocation: str, author: str, text: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event.model_validate(
        {
            "id": f"e{n}",
            "invocationId": invocation,
            "author": author,
            "timestamp": 100.0 + n,
            "content": {"role": role, "parts": [{"text": text}]},
        }
    )


def _summary(n: int, *, request_id: str | None) -> Event:
    """A summary of e0..e1; the pipeline's names its request, ADK's does not."""
    event = Event.model_validate(
        {
            "id": f"summary{n}",
            "invocationId": f"cmp{n}",
            "author": "user",
            "timestamp": 100.0 + n,
            "actions": {
                "compaction": {
                    "startTimestamp": 100.0,
                    "endTimestamp": 101.0,
                    "compactedContent": {"role": "model", "parts": [{"text": "they greeted"}]},
                }
            },
        }
    )
    return event if request_id is None else with_summary_request_id(event, request_id)


def _script() -> list[Event]:
    """inv1 (user, agent), inv2's user event (completes inv1), ADK's summary of inv1, reply."""
    return [
        _event(0, "inv1", "user", "hi"),
        _event(1, "inv1", "support_agent", "hello"),
        _event(2, "inv2", "user", "bye"),
        _summary(3, request_id=None),
        _event(4, "inv2", "support_agent", "see you"),
        _event(5, "inv3", "user", "again"),
    ]


def _envelope(event: Event) -> Envelope:
    return Envelope(
        tenant=TenantId("acme"),
        session_key=KEY,
        producer_id="runner",
        idempotency_key=event.id,
        event=event,
    )


def _logged() -> list[LoggedEvent]:
    return [LoggedEvent(Offset(n), _envelope(event)) for n, event in enumerate(_script())]


def test_the_decision_requests_nothing_under_adk_ownership() -> None:
    config = CompactionConfig(compaction_interval=1, overlap_size=0, owner="adk")
    _, requests = replay_decisions(KEY, _logged(), config)
    assert requests == []
    assert pipeline_compacts(config) is False


def test_the_same_log_decides_requests_under_pipeline_ownership() -> None:
    config = CompactionConfig(compaction_interval=1, overlap_size=0)
    _, requests = replay_decisions(KEY, _logged(), config)
    assert [(r.trigger, r.event_offsets) for r in requests] == [("sliding_window", (0, 1))]


def test_conflicting_summaries_are_adks_on_pipeline_owned_apps() -> None:
    pipeline = CompactionConfig(compaction_interval=1, overlap_size=0)
    adk = CompactionConfig(owner="adk")
    adks, ours = _summary(3, request_id=None), _summary(3, request_id="9f2c")
    plain = _event(0, "inv1", "user", "hi")
    assert [conflicting_summary(e, pipeline) for e in (adks, ours, plain)] == [True, False, False]
    assert [conflicting_summary(e, adk) for e in (adks, ours, plain)] == [False, False, False]


# --- the batch: counted and logged ----------------------------------------------------------


def _records() -> list[SourceRecord]:
    return [
        SourceRecord("events", 0, n, KEY.encode(), encode(_envelope(event)))
        for n, event in enumerate(_script())
    ]


def _project(settings: ProjectorSettings, records: list[SourceRecord]) -> BatchOutcome:
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=1)
    return projector.project(records, lambda partition, key: None)


def test_the_batch_lists_and_logs_adks_summary_on_a_pipeline_owned_app(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    settings = _settings({"acme/support": EVERY_INVOCATION})
    records = _records()
    with caplog.at_level(logging.WARNING, logger="streams.batch.projector"):
        outcome = _project(settings, records)
        _project(settings, records[3:4])  # a fresh worker: the record is no redelivery there
    assert outcome.dead_letters == []
    assert outcome.conflicting_summaries == [(KEY, 3)]
    lines = [r.getMessage() for r in caplog.records if "ADK authored" in r.getMessage()]
    assert len(lines) == 2
    assert lines[0].startswith("session=acme/support/u1/s1 offset=3: a compaction event")
    metrics = ProjectorMetrics()
    metrics.summaries_conflicted([settings.compaction_entry(KEY)])
    exposition = metrics.exposition().decode()
    assert 'ctxstream_projector_conflicting_summaries_total{entry="acme/support"} 1.0' in (
        exposition
    )


def test_the_batch_under_adk_ownership_folds_adks_summary_and_requests_nothing(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch)
    settings = _settings({"acme/support": {**EVERY_INVOCATION, "owner": "adk"}})
    with caplog.at_level(logging.WARNING, logger="streams.batch.projector"):
        outcome = _project(settings, _records())
    assert outcome.dead_letters == []
    assert outcome.requests == []
    assert outcome.conflicting_summaries == []
    assert not [r for r in caplog.records if "ADK authored" in r.getMessage()]
    (changed,) = outcome.changed
    snapshot = changed.snapshot()
    assert snapshot.boundary is not None
    assert (snapshot.boundary.summary_offset, snapshot.boundary.request_id) == (3, None)
    assert (snapshot.boundary.start_timestamp, snapshot.boundary.end_timestamp) == (100.0, 101.0)
    assert snapshot.in_flight_request_id is None
