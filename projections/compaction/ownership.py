"""Who compacts an app, and the summaries that contradict it. Pure: no I/O, no clock.

Under ``owner="pipeline"`` the projector requests summaries and the
summarizer answers them, each naming its request
(:func:`projections.event_kinds.summary_request_id`). Under ``owner="adk"``
ADK's runner compacts: the projector folds ADK's summary events and decides
no request. A summary naming no request on a pipeline-owned app is a
conflict (the App carries an ``events_compaction_config`` it should not):
it is folded all the same, and the projector counts and logs it.

Example: a pipeline-owned app, an event with ``actions.compaction`` and no
``customMetadata.ctxstream.compaction_request_id`` -> :func:`conflicting_summary`
True; the same event under ``owner="adk"`` -> False.
"""

from __future__ import annotations

from projections.compaction.config import CompactionConfig
from projections.event_kinds import is_summary, summary_request_id
from schemas.event import Event


def pipeline_compacts(config: CompactionConfig) -> bool:
    """Whether the projector decides compaction requests for an app of `config`."""
    return config.owner == "pipeline"


def conflicting_summary(event: Event, config: CompactionConfig) -> bool:
    """Whether `event` is a summary ADK authored on an app the pipeline compacts.

    ADK's summaries name no compaction request; the pipeline's always do.
    """
    return pipeline_compacts(config) and is_summary(event) and summary_request_id(event) is None
