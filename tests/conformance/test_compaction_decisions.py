"""ADK's runner decides when to compact; the core's ``replay_decisions`` must decide the same.

Each ``compaction_decisions`` vector (recorded by ``tests/recorder`` from
google-adk 2.13.0's real ``Runner``, format in ``tests/recorder/README.md``) is
a session's raw events in stream order, its compaction config, the answers of
ADK's scripted summarizer, and every summary ADK's runner appended: trigger,
the ids of the events handed to the summarizer, the seed, the range, and
``after_index``, the index in the raw events after which ADK appended it.

:mod:`projections.conformance.compaction_decisions` folds the raw events as one
session's records (offsets in stream order) with
:func:`projections.compaction_decision.replay_decisions` and answers every
request the core decides as the pipeline does: a summary event of ADK's shape
over the request's range, naming the request, with the text and usage of the
summary ADK made at the same place, appended as the very next record.

**Position.** ADK appends a summary after raw event ``i`` when a hook ran on
events ``0..i`` (the post-invocation hook after an invocation's last event,
the pre-request token check before a model call). The core decides while
folding a record ``j``. When ``j`` is the first raw event of an invocation the
stream has not seen (not a summary or a rewind, after at least one
invocation), the core evaluated the post-invocation hook on the projection
*before* ``j`` (events ``0..j-1``): its position is ``j - 1``. Otherwise it
evaluated the token trigger on the projection *after* ``j``: position ``j``
(while folding an appended summary: the last raw event before it). Example,
``compaction_interval=2``: ADK's hook after inv2's last event ``e4`` appends
its summary at ``after_index=3``; the core decides it on inv3's first event
``e5`` (index 4), position 3.

The comparison is exact: the whole ordered list of compactions.

**Known divergences.** :data:`KNOWN_DIVERGENCES` lists the vectors where the
core does not decide what ADK's runner decided today, each with the reason; a
listed vector must still differ (the test fails once it agrees, so the list
only shrinks as the core is fixed), and every other vector must agree
exactly. The three causes: ADK's pre-request token check runs before the next
model call, after the tool responses, while the core decides on the response
that reports the count; with no usage reported ADK falls back to its
characters/4 estimate, which the core's trigger never reads; a summary the
pipeline appends lands after the next invocation's first event, so a rewind
to that invocation removes it, where ADK's survives.
"""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.vectors import RECORDED_DIR, Vector, load_vectors, vector_id

# The project's own kind: always the recorded vectors inside the checkout, also
# when CTXSTREAM_CONFORMANCE_DIR points the ADK kinds at another folder.
VECTORS = load_vectors("compaction_decisions", RECORDED_DIR)


_PRE_REQUEST = "ADK's pre-request token check runs after the tool responses"
_NO_USAGE = "no usage reported: ADK's characters/4 estimate"
_REWIND = "a rewind to the next invocation removes the pipeline's later summary"
KNOWN_DIVERGENCES: dict[str, str] = {
    "compaction_decisions/024-rewind-i2-o0": _REWIND,
    "compaction_decisions/033-tools-t150-r0": _PRE_REQUEST,
    "compaction_decisions/034-tools-t200-r2": _PRE_REQUEST,
    "compaction_decisions/035-tools-t300-r3": _PRE_REQUEST,
    "compaction_decisions/036-tools-t250-r1": _PRE_REQUEST,
    "compaction_decisions/037-mixed-t200-r0": _PRE_REQUEST,
    "compaction_decisions/038-mixed-t250-r2": _PRE_REQUEST,
    "compaction_decisions/039-mixed-t350-r4": _PRE_REQUEST,
    "compaction_decisions/040-reports-t250-r1": _PRE_REQUEST,
    "compaction_decisions/042-jobs-t200-r2": _PRE_REQUEST,
    "compaction_decisions/044-no-usage-t150-r1": _NO_USAGE,
    "compaction_decisions/045-no-usage-t300-r2": _NO_USAGE,
    "compaction_decisions/046-pair-t200-r1": _PRE_REQUEST + "; the target agent has no count",
    "compaction_decisions/047-pair-t400-r2": _PRE_REQUEST,
    "compaction_decisions/048-coarse-clock-t200-r2": _PRE_REQUEST,
    "compaction_decisions/054-tools-i3-o1-t200-r1": _PRE_REQUEST,
    "compaction_decisions/056-mixed-i4-o1-t220-r2": _PRE_REQUEST,
    "compaction_decisions/059-minimal-tool-loop-t500-r0": _PRE_REQUEST,
    "compaction_decisions/060-minimal-no-usage-t30-r0": _NO_USAGE,
    "compaction_decisions/061-minimal-rewind-after-summary-i1-o0": _REWIND,
}


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_core_decides_what_adk_compacted(vector: Vector) -> None:
    if vector["id"] in KNOWN_DIVERGENCES:
        assert actual_for(vector) != vector["expected"], (
            f"{vector['id']} now agrees with ADK: remove it from KNOWN_DIVERGENCES"
        )
    else:
        assert actual_for(vector) == vector["expected"]


def test_every_known_divergence_names_a_recorded_vector() -> None:
    assert set(KNOWN_DIVERGENCES) <= {vector["id"] for vector in VECTORS}


def test_the_vectors_cover_both_triggers_both_hooks_and_quiet_sessions() -> None:
    hooks = {hook for vector in VECTORS for hook in vector["adk_hooks"]}
    triggers = {c["trigger"] for v in VECTORS for c in v["expected"]["compactions"]}
    assert hooks == {"post_invocation", "pre_request"}
    assert triggers == {"sliding_window", "token_threshold"}
    assert any(not vector["expected"]["compactions"] for vector in VECTORS)
