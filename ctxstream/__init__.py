"""ctxstream's front door: the client agents append and read with, and its errors.

Agents append their sessions' events with :class:`Client` (async) or :class:`SyncClient`
and read a session's context back, read-your-writes, with :meth:`Client.context`
(:mod:`ctxstream.reads`), as it stood at an offset with :meth:`Client.context_as_of`,
and the events a summary stands in for with :meth:`Client.expand`; services follow a
tenant's projection snapshots with :meth:`Client.subscribe`; :meth:`Client.replay`
rebuilds projections from the log into another namespace. The ``ctxstream`` command
is :mod:`ctxstream.cli`, the HTTP API :mod:`ctxstream.api`, the benchmarks and the
demo :mod:`ctxstream.bench`; ``ctxstream/README.md`` has a line per module.
"""

from ctxstream.appends.results import AppendResult
from ctxstream.client import Client
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
from ctxstream.sync_client import SyncClient
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
