"""The front door: ``ctxstream.__all__`` is pinned, and every name in it imports."""

from __future__ import annotations

import importlib

import ctxstream

PUBLIC_NAMES = [
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


def test_all_is_exactly_the_public_names_in_order() -> None:
    assert ctxstream.__all__ == PUBLIC_NAMES


def test_every_public_name_imports_from_the_package() -> None:
    module = importlib.import_module("ctxstream")
    for name in PUBLIC_NAMES:
        assert getattr(module, name).__name__ == name, name


def test_a_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from ctxstream import *", namespace)  # noqa: S102 - the import under test
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(PUBLIC_NAMES)


def test_the_errors_are_the_projects_and_the_clients_are_its_own() -> None:
    from schemas.errors import CtxstreamError

    errors = [name for name in PUBLIC_NAMES if name.endswith("Error")]
    assert all(issubclass(getattr(ctxstream, name), CtxstreamError) for name in errors)
    assert ctxstream.Client.__module__ == "ctxstream.client"
    assert ctxstream.SyncClient.__module__ == "ctxstream.sync_client"
