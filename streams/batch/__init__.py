"""The batch step both engines share: `events` records folded into their sessions. No I/O.

Either engine (the native aiokafka engine, :mod:`streams.native_engine`, or the
faust one, :mod:`streams.faust_engine`) hands a batch of raw records to
:meth:`BatchProjector.project` with a reader of the ``sessions`` table; what
comes back (:class:`BatchOutcome`) is everything the batch must cause: dead
letters, compaction requests, snapshots and table writes, which the engine
moves. Replay (:mod:`ctxstream.replay`) and ``bench fold`` run the same step.
Every decision is the pure core's (:func:`projections.compaction.decision.step`).

Modules: ``records`` (decode, dead letters), ``cache``, ``fold``, ``write``
(checkpoint and write steps), ``outcome``, ``stored`` (restore from the table),
``inheritance`` (a fork's start), ``projector``. Design, crash and memory
notes: ``streams/README.md``, "The batch step".
"""

from streams.batch.cache import SessionCache
from streams.batch.inheritance import Inheritance, inherit
from streams.batch.outcome import BatchOutcome, HistoryNeed, TableWrite
from streams.batch.projector import BatchProjector
from streams.batch.records import DecodedRecord, SourceRecord, decode_record
from streams.batch.stored import TableReader, rebuild_session, stored_header

__all__ = [
    "BatchOutcome",
    "BatchProjector",
    "DecodedRecord",
    "HistoryNeed",
    "Inheritance",
    "SessionCache",
    "SourceRecord",
    "TableReader",
    "TableWrite",
    "decode_record",
    "inherit",
    "rebuild_session",
    "stored_header",
]
