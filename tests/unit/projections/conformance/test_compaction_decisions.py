"""The decision replay (``projections/conformance/compaction_decisions.py``) on hand-made sessions.

The recorded vectors (``tests/conformance/test_compaction_decisions.py``)
always script a summary, with its time and usage, for every compaction ADK
made, and give every event an id. These sessions leave those out, and check
the replay's bookkeeping: the summary record it appends after a decision
(offset, producer, idempotency key, ids, time, usage, text, the request it
names). Expected values are worked out by hand from the module's docstring
and the reference's token trigger (characters // 4 without recorded usage).

The session used throughout, token trigger ``token_threshold=10``,
``event_retention_size=0``, no recorded usage:

====  =====  ======  =====  ====  ===============================
index  id    inv     author  time  text (characters)
====  =====  ======  =====  ====  ===============================
0      e1    inv1    user    101   20
1      e2    inv1    agent   102   40
2      e3    inv2    user    106   8
3      e4    inv2    agent   107   40
4      e5    inv3    user    111   3
====  =====  ======  =====  ====  ===============================

* before ``e2``'s model call: ``e1`` only, 20 // 4 = 5 < 10: nothing;
* ``e3`` opens ``inv2``, so ADK's hook ran after ``inv1``: 60 // 4 = 15: the
  first compaction, ``e1 e2``, chosen before ``e3``: after index 1;
* before ``e4``'s model call: the summary's text and ``e3``, below 40
  characters for every text used here: nothing;
* ``e5`` opens ``inv3``: the summary (the seed), ``e3`` and ``e4``, over 40
  characters: the second compaction, ``e3 e4`` with the first summary as seed,
  its range from the seed's time 101: after index 3.
"""

from __future__ import annotations

from typing import Any

from projections.compaction.config import CompactionConfig
from projections.conformance.compaction_decisions import (
    SESSION,
    TENANT,
    UNSCRIPTED_SUMMARY,
    _Replay,
    _script,
    _ScriptedSummary,
    run,
)
from projections.event_kinds import summary_request_id
from schemas.envelope import Envelope
from schemas.event import Event, UsageMetadata
from tests.support.vectors import Json, text_content, vector_event

CONFIG: Json = {"token_threshold": 10, "event_retention_size": 0}


def _events() -> list[Json]:
    return [
        vector_event("e1", "inv1", "user", 101.0, text_content("user", "q" * 20)),
        vector_event("e2", "inv1", "agent", 102.0, text_content("model", "a" * 40)),
        vector_event("e3", "inv2", "user", 106.0, text_content("user", "q" * 8)),
        vector_event("e4", "inv2", "agent", 107.0, text_content("model", "b" * 40)),
        vector_event("e5", "inv3", "user", 111.0, text_content("user", "bye")),
    ]


def _compactions(first_summary_text: str) -> list[Json]:
    """The two compactions of the session, the second seeded with the first summary."""
    return [
        {
            "after_index": 1,
            "trigger": "token_threshold",
            "summarized_event_ids": ["e1", "e2"],
            "seed": None,
            "start_timestamp": 101.0,
            "end_timestamp": 102.0,
        },
        {
            "after_index": 3,
            "trigger": "token_threshold",
            "summarized_event_ids": ["e3", "e4"],
            "seed": {
                "timestamp": 101.0,
                "author": "model",
                "branch": None,
                "content": {"parts": [{"text": first_summary_text}], "role": "model"},
            },
            "start_timestamp": 101.0,
            "end_timestamp": 107.0,
        },
    ]


# -- run: vectors that script fewer summaries than ADK made --------------------------


def test_a_vector_without_summaries_is_answered_with_the_placeholder_text() -> None:
    result = run({"config": CONFIG, "events": _events()})
    assert UNSCRIPTED_SUMMARY == "a summary ADK did not make"
    assert result == {"compactions": _compactions("a summary ADK did not make")}


def test_summaries_are_used_in_order_then_the_placeholder() -> None:
    # One scripted summary, without time or usage: the second compaction's
    # summary has no answer (its text is not shown: nothing follows it).
    result = run({"config": CONFIG, "events": _events(), "summaries": [{"text": "first"}]})
    assert result == {"compactions": _compactions("first")}


def test_an_event_without_id_is_replayed_under_an_index_key() -> None:
    events = _events()
    del events[4]["id"]
    result = run({"config": CONFIG, "events": events, "summaries": [{"text": "first"}]})
    assert result == {"compactions": _compactions("first")}


# -- _script: the answers a vector scripts ------------------------------------------------


def test_a_scripted_summary_keeps_its_text_usage_and_time() -> None:
    usage = {"candidatesTokenCount": 7, "promptTokenCount": 321, "totalTokenCount": 328}
    script = _script(
        [{"text": "first", "timestamp": 105.0, "usage_metadata": usage}, {"text": "second"}]
    )
    assert script == [
        _ScriptedSummary(
            text="first",
            usage=UsageMetadata(
                candidates_token_count=7, prompt_token_count=321, total_token_count=328
            ),
            timestamp=105.0,
        ),
        _ScriptedSummary(text="second", usage=None, timestamp=None),
    ]


def test_a_null_usage_is_no_usage() -> None:
    assert _script([{"text": "t", "usage_metadata": None, "timestamp": None}]) == [
        _ScriptedSummary(text="t", usage=None, timestamp=None)
    ]


# -- _Replay: the summary record appended after a decision ----------------------------------


def _replay(script: list[_ScriptedSummary]) -> tuple[_Replay, list[Any]]:
    """A replay of e1 e2 e3, and the requests folding e3 decided (the first compaction)."""
    replay = _Replay(config=CompactionConfig.model_validate(CONFIG), script=script)
    requests: list[Any] = []
    for index, data in enumerate(_events()[:3]):
        event = Event.model_validate(data)
        envelope = Envelope(
            tenant=TENANT,
            session_key=SESSION,
            producer_id="adk",
            idempotency_key=event.id,
            event=event,
        )
        requests.extend(replay.fold(envelope, index))
    return replay, requests


def test_folding_gives_records_consecutive_offsets_and_notes_the_decision() -> None:
    replay, requests = _replay([])
    assert [int(record.offset) for record in replay.projection.log.records] == [0, 1, 2]
    assert replay.next_offset == 3
    assert len(requests) == 1
    assert replay.decisions == _compactions("unused")[:1]


def test_the_answer_is_the_next_record_with_the_scripted_summary() -> None:
    usage = UsageMetadata(prompt_token_count=321, candidates_token_count=7)
    replay, [request] = _replay([_ScriptedSummary(text="first", usage=usage, timestamp=105.0)])
    replay.answer(request, 2, 106.0)
    assert replay.answered == 1
    record = replay.projection.log.records[-1]
    assert int(record.offset) == 3
    assert replay.next_offset == 4
    envelope = record.envelope
    assert envelope.producer_id == "summarizer"
    assert envelope.idempotency_key == f"summary:{request.request_id}"
    assert (envelope.tenant, envelope.session_key) == ("conformance", SESSION)
    summary = envelope.event
    assert summary_request_id(summary) == request.request_id
    assert (summary.id, summary.invocation_id, summary.author) == (
        "summary-1",
        "cmp-summary-1",
        "user",
    )
    assert summary.timestamp == 105.0
    assert summary.usage_metadata == usage
    assert summary.content is None
    compaction = summary.actions.compaction
    assert compaction is not None
    assert (compaction.start_timestamp, compaction.end_timestamp) == (101.0, 102.0)
    assert compaction.compacted_content.model_dump(exclude_none=True) == {
        "role": "model",
        "parts": [{"text": "first"}],
    }
    assert replay.decisions == _compactions("unused")[:1]


def test_a_summary_scripted_without_time_takes_the_deciding_events_time() -> None:
    replay, [request] = _replay([_ScriptedSummary(text="first", usage=None, timestamp=None)])
    replay.answer(request, 2, 106.0)
    summary = replay.projection.log.records[-1].envelope.event
    assert summary.timestamp == 106.0
    assert summary.usage_metadata is None


def test_an_unscripted_summary_has_the_placeholder_and_no_usage() -> None:
    replay, [request] = _replay([])
    replay.answer(request, 2, 106.0)
    summary = replay.projection.log.records[-1].envelope.event
    assert replay.answered == 1
    assert summary.timestamp == 106.0
    assert summary.usage_metadata is None
    compaction = summary.actions.compaction
    assert compaction is not None
    assert compaction.compacted_content.model_dump(exclude_none=True) == {
        "role": "model",
        "parts": [{"text": "a summary ADK did not make"}],
    }
