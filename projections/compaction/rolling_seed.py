"""The rolling seed: the previous summary, carried into a token-threshold window. Pure: no I/O.

Deliberate ADK trick (reference §5.4): the token trigger puts a synthetic
event first in its window, timestamped with the previous summary's *start*
and holding its text, so the new summary's range contains the previous one,
which is then subsumed. The projector builds that event while it selects
(:func:`seed_event`), carries its fields in the request
(:func:`carried_seed`), and the summarizer rebuilds the same event from the
request (:func:`rebuilt_seed_event`): one definition of the seed for both.
"""

from __future__ import annotations

from schemas.compaction_request import SummarySeed
from schemas.event import Event


def seed_event(previous: Event, *, invocation_id: str) -> Event:
    """The synthetic first window item that carries the summary `previous` forward.

    Raises:
        ValueError: `previous` is not a summary event.
    """
    compaction = previous.actions.compaction
    if compaction is None:
        raise ValueError(f"event {previous.id!r} is not a summary event")
    return Event(
        invocation_id=invocation_id,
        author="model",
        branch=previous.branch,
        isolation_scope=previous.isolation_scope,
        timestamp=compaction.start_timestamp,
        content=compaction.compacted_content,
    )


def carried_seed(seed: Event) -> SummarySeed | None:
    """What a request carries of the seed event `seed` (None without content).

    The invocation id stays behind (the summarizer's only has to be fresh),
    and so does the isolation scope: the pipeline asks only for unscoped
    summaries, so its seeds are unscoped.

    Raises:
        ValueError: The content is beyond what a request may carry
            (:func:`schemas.compaction_request.seed_problem`).
    """
    if seed.content is None:
        return None
    return SummarySeed(
        timestamp=seed.timestamp, author=seed.author, branch=seed.branch, content=seed.content
    )


def rebuilt_seed_event(seed: SummarySeed, *, invocation_id: str) -> Event:
    """The seed event of a request's `seed`, as the projector built it but for the id."""
    return Event(
        invocation_id=invocation_id,
        author=seed.author,
        branch=seed.branch,
        timestamp=seed.timestamp,
        content=seed.content,
    )
