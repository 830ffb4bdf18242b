"""ADK's runner decides when to compact; the core's ``replay_decisions`` must decide the same.

Each ``compaction_decisions`` vector (recorded by ``tests/recorder`` from
google-adk 2.13.0's real ``Runner``, format in ``tests/recorder/README.md``) is
a session's raw events in stream order, its compaction config, the answers of
ADK's scripted summarizer, and every summary ADK's runner appended: trigger,
the ids of the events handed to the summarizer, the seed, the range, and
``after_index``, the index in the raw events after which ADK appended it.

:mod:`projections.conformance.compaction_decisions` folds the raw events as one
session's records (offsets in stream order) with
:func:`projections.compaction.decision.step`, the step
:func:`~projections.compaction.decision.replay_decisions` folds, record by
record, and answers every
request the core decides as the pipeline does: a summary event of ADK's shape
over the request's range, naming the request, with the text and usage of the
summary ADK made at the same place, appended as the very next record.

**Position.** ADK appends a summary after raw event ``i`` when a hook ran on
events ``0..i``: the post-invocation hook after an invocation's last event,
the pre-request token check before a model call. The core decides while
folding a record ``j`` and says on which projection it chose the window
(:attr:`~projections.compaction.decision.Step.chosen_before`): on the one
*before* ``j`` (the post-invocation hook when ``j`` is the first event of a
new invocation, or the check before the model call whose response ``j``
is), position ``j - 1``; on the one *after* ``j`` (the check before the
model call that follows a tool's response ``j``), position ``j``. Example,
``compaction_interval=2``: ADK's hook after inv2's last event ``e4``
appends its summary at ``after_index=3``; the core decides it on inv3's
first event ``e5`` (index 4), chosen before it: position 3.

The comparison is exact: the whole ordered list of compactions.

**Known divergences.** :data:`KNOWN_DIVERGENCES` lists the vectors where the
core does not decide what ADK's runner decided, each with the reason; a
listed vector must still differ (the test fails once it agrees, so the list
only shrinks as the core is fixed), and every other vector must agree
exactly. What is left is a rewind behind a summary: the pipeline's summary
of an invocation is decided by the first record of the next one, so it
lands after that record, and a rewind to that invocation removes it where
ADK's (appended before the record) survives. ADK's summary of the
invocation before a rewind is decided by the rewind record itself, and the
pipeline's would land after the rewind that removes its events, where no
rule of the fold removes it (projections/README.md, "What a stream cannot
reproduce").
"""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.support.vectors import RECORDED_DIR, Vector, load_vectors, vector_id

# The project's own kind: always the recorded vectors inside the checkout, also
# when CTXSTREAM_CONFORMANCE_DIR points the ADK kinds at another folder.
VECTORS = load_vectors("compaction_decisions", RECORDED_DIR)


_REWIND = "a rewind to the next invocation removes the pipeline's later summary"
KNOWN_DIVERGENCES: dict[str, str] = {
    "compaction_decisions/024-rewind-i2-o0": _REWIND,
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
