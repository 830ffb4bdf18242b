"""The statuses the fold gives a session's records: what a history row stores. Pure data.

Each member names one way the fold (:func:`projections.fold.projection.apply`)
treats a record, with the rule and the reference section that give it. A
record of an *applied* kind (live, masked, superseded, rewound, rewind) may
change status when later records arrive; the others are final on arrival.
Rules, the order they are checked in and the state's bound:
projections/history/README.md.

Example: ``e1@1 S[1,1]`` -> e1 ``masked``, S ``live``.
"""

from __future__ import annotations

from enum import StrEnum


class EventStatus(StrEnum):
    """What the fold made of one record of a session."""

    LIVE = "live"
    """Applied, not annulled by a rewind, and shown: a raw event outside the
    coverage of its isolation scope's surviving summaries, or such a summary
    itself (§3.1, §3.2, §3.3). What ``live_history`` selects."""

    MASKED = "masked"
    """A live raw event whose timestamp lies in a surviving summary's range of
    its own isolation scope, both ends inclusive (§3.3 step 4; per scope, since
    masking runs after the scope filter, §8.2 rule 1). Becomes live again only
    when a rewind annuls the summaries that cover it."""

    SUPERSEDED = "superseded"
    """A live summary whose range another live summary of its isolation scope
    contains; of identical ranges the one appended last survives (§3.2). It
    is not shown (§3.3 step 3) and its range adds nothing to the coverage."""

    REWOUND = "rewound"
    """Applied, then annulled by a later rewind: it lies between the first event
    of the rewind's target invocation and the rewind (§3.1). A rewind inside
    that span is rewound too and has no effect. A later rewind may bring it
    back (§3.1 walks from the newest rewind, §16)."""

    REWIND = "rewind"
    """A rewind record (``actions.rewind_before_invocation_id``) that no later
    rewind annuls: applied (its state delta counts, §10) but never live (§3.1
    step 2), whether or not its target appeared before it."""

    DUPLICATE = "duplicate"
    """An event equal (same id, every field) to the latest applied event with
    its id: a producer's retry, which ADK's session service does not store
    (§11.1 rule 2). Final."""

    DUPLICATE_SUMMARY = "duplicate_summary"
    """A summary naming a compaction request that a live summary already
    answers (``customMetadata.ctxstream.compaction_request_id``): the fold
    ignores it (:mod:`projections.compaction.summary_ledger`). Final, even if a
    rewind later annuls the summary that answered the request."""

    PARTIAL = "partial"
    """A streaming chunk (``partial``): ADK's session service never stores it
    (§11.1 rule 1). Final."""

    REFUSAL = "refusal"
    """The pipeline's refusal of a compaction request (``compaction_refused``):
    bookkeeping, never stored or shown. Final. A summary that answers a
    refused request is not refused: the fold applies it like any other."""

    FORK = "fork"
    """A fork record (``fork_of``): bookkeeping that makes the session a fork,
    never stored or shown (:mod:`projections.fold.fork`). Final."""

    MEMORY = "memory"
    """A memory record (``ctxstream.memory``): the sink's word on which records
    are memories (:mod:`schemas.memory_mark`), never stored or shown. Final
    (``deleted`` when a later deletion ends its incarnation)."""

    DELETION = "deletion"
    """A deletion record (``session_deleted``): it ends the session's
    incarnation (:mod:`schemas.deletion_mark`). Final."""

    STALE = "stale"
    """A conditional record (``expected_offset``) the fold refused: the
    session's last writer record was not at the offset it expected
    (projections/README.md, "Conditional records"). Checked before any other
    rule, so a stale deletion deletes nothing. Final (``deleted`` when a later
    deletion ends its incarnation)."""

    CREATION = "creation"
    """A creation record (``session_created``) the fold applied: its state
    delta counts and it starts an incarnation (:mod:`schemas.creation_mark`),
    but it is never live and no rewind reaches it. Final (``deleted`` when a
    later deletion ends its incarnation)."""

    DELETED = "deleted"
    """Any record before a deletion record but an earlier deletion record,
    whatever its status was; and a
    later summary or refusal naming a request the deleted incarnation knew,
    which the fold drops. Final."""


#: Statuses a later record can change: the records the fold applied.
APPLIED = frozenset(
    {
        EventStatus.LIVE,
        EventStatus.MASKED,
        EventStatus.SUPERSEDED,
        EventStatus.REWOUND,
        EventStatus.REWIND,
    }
)
