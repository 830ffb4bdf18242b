"""ctxstream's front door and tools: the client, the ``ctxstream`` command, the demo, benchmarks.

Agents append their sessions' events with :class:`Client` (async) or
:class:`SyncClient` (:mod:`ctxstream.client`) and read a session's context back,
read-your-writes, with :meth:`Client.context` (:mod:`ctxstream.context_reads`), as it
stood at an offset with :meth:`Client.context_as_of`, and the events a summary stands in
for with :meth:`Client.expand`; services follow a tenant's projection snapshots with
:meth:`Client.subscribe` (:mod:`ctxstream.subscription`); :meth:`Client.replay`
rebuilds projections from the log into another namespace (:mod:`ctxstream.replay`).

The command (:mod:`ctxstream.cli.main`, also ``python -m ctxstream``) starts every
process of the pipeline (the projector from :mod:`streams`, the summarizer from
:mod:`summarizer_worker`) and runs the tools around it: topic creation, the
conformance report, the live demo and the benchmarks. The import graph shows
the architecture: `ctxstream` -> `streams`, `summarizer_worker` ->
`projections` -> `schemas`; nothing below imports `ctxstream`.
"""

from ctxstream.append_results import AppendResult
from ctxstream.client import Client, SyncClient
from ctxstream.errors import (
    BrokerUnavailableError,
    ContextReadError,
    InvalidArgumentError,
    InvalidEventError,
    InvocationNotFoundError,
    NoPartitionOwnerError,
    ReadTimeoutError,
    SessionNotFoundError,
    SummaryNotFoundError,
    TopicCreationError,
    TopicMissingError,
)
from ctxstream.replay import PartitionProgress, ReplayProgress, ReplayReport
from ctxstream.subscription import Subscribed
from schemas.read_protocol import ExpandedPage

__all__ = [
    "AppendResult",
    "BrokerUnavailableError",
    "Client",
    "ContextReadError",
    "ExpandedPage",
    "InvalidArgumentError",
    "InvalidEventError",
    "InvocationNotFoundError",
    "NoPartitionOwnerError",
    "PartitionProgress",
    "ReadTimeoutError",
    "ReplayProgress",
    "ReplayReport",
    "SessionNotFoundError",
    "Subscribed",
    "SummaryNotFoundError",
    "SyncClient",
    "TopicCreationError",
    "TopicMissingError",
]
