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
"""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.vectors import RECORDED_DIR, Vector, load_vectors, vector_id

# The project's own kind: always the recorded vectors inside the checkout, also
# when CTXSTREAM_CONFORMANCE_DIR points the ADK kinds at another folder.
VECTORS = load_vectors("compaction_decisions", RECORDED_DIR)


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_core_decides_what_adk_compacted(vector: Vector) -> None:
    assert actual_for(vector) == vector["expected"]


def test_the_vectors_cover_both_triggers_both_hooks_and_quiet_sessions() -> None:
    hooks = {hook for vector in VECTORS for hook in vector["adk_hooks"]}
    triggers = {c["trigger"] for v in VECTORS for c in v["expected"]["compactions"]}
    assert hooks == {"post_invocation", "pre_request"}
    assert triggers == {"sliding_window", "token_threshold"}
    assert any(not vector["expected"]["compactions"] for vector in VECTORS)
