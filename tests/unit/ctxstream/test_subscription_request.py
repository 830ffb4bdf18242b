"""The arguments of ``Client.subscribe``: what each becomes, and each refusal naming its argument.

Refusals happen at the call, before anything connects: the client here names
a port nothing listens on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ctxstream import Client, InvalidArgumentError
from ctxstream.subscription_request import (
    FromEnd,
    FromOffsets,
    FromTime,
    SubscriptionRequest,
    subscription_request,
)
from schemas.keys import TenantId

NOWHERE = "127.0.0.1:1"


def test_the_defaults_follow_every_session_from_the_end() -> None:
    assert subscription_request("acme") == SubscriptionRequest(TenantId("acme"), None, FromEnd())


@pytest.mark.parametrize(
    ("from_offset", "start"),
    [
        (0, FromOffsets({}, otherwise=0)),
        (42, FromOffsets({}, otherwise=42)),
        ({0: 7, 3: 0}, FromOffsets({0: 7, 3: 0}, otherwise=0)),
    ],
)
def test_an_offset_starts_every_partition_and_a_mapping_the_partitions_it_names(
    from_offset: int | Mapping[int, int], start: FromOffsets
) -> None:
    assert subscription_request("acme", from_offset=from_offset).start == start


@pytest.mark.parametrize(
    ("from_time", "milliseconds"),
    [
        (datetime(2025, 12, 2, 9, 0, 0, 250_000, tzinfo=UTC), 1_764_666_000_250),
        (datetime(2025, 12, 2, 10, 0, tzinfo=timezone(timedelta(hours=1))), 1_764_666_000_000),
        (1_764_666_000, 1_764_666_000_000),
        # A record stamped 1_764_666_000_000 ms was written before 1_764_666_000.0004 s.
        (1_764_666_000.0004, 1_764_666_000_001),
    ],
)
def test_a_time_becomes_the_first_whole_millisecond_at_or_after_it(
    from_time: datetime | float, milliseconds: int
) -> None:
    assert subscription_request("acme", from_time=from_time).start == FromTime(milliseconds)


def test_sessions_of_the_tenant_are_kept_as_a_set() -> None:
    request = subscription_request("acme", sessions=["acme/a/u/s1", "acme/a/u/s2", "acme/a/u/s1"])
    assert request.sessions == frozenset({"acme/a/u/s1", "acme/a/u/s2"})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"tenant": ""}, "tenant: the tenant part is empty"),
        ({"tenant": "acme/eu"}, "tenant: 'acme/eu' contains '/'"),
        ({"tenant": "x" * 129}, "tenant: 129 characters, at most 128"),
        ({"tenant": "acme "}, "tenant: the tenant part 'acme ' starts or ends with white space"),
        ({"tenant": ".."}, "tenant: the tenant part is '..', a path step"),
        ({"tenant": "ac\u202eme"}, r"tenant: the tenant part 'ac\u202eme' contains '\u202e'"),
        ({"tenant": 7}, "tenant: expected a string, got int"),
        ({"sessions": "acme/a/u/s"}, "sessions: expected a collection of session keys, got one"),
        ({"sessions": []}, "sessions: empty"),
        ({"sessions": ["acme/a/u/s", "other/a/u/s"]}, "sessions[1]: tenant 'acme' does not own"),
        ({"sessions": ["acme/a/u"]}, "sessions[0]: invalid session key 'acme/a/u'"),
        ({"sessions": ["acme/a/../s"]}, "sessions[0]: invalid session key"),
        ({"sessions": [b"acme/a/u/s"]}, "sessions[0]: expected a session key, got bytes"),
        ({"from_offset": -1}, "from_offset: -1 is negative"),
        ({"from_offset": "0"}, "from_offset: expected an offset or a mapping"),
        ({"from_offset": True}, "from_offset: expected an offset or a mapping"),
        ({"from_offset": {0: -5}}, "from_offset[0]: -5 is negative"),
        ({"from_offset": {0: 1.5}}, "from_offset[0]: expected an offset (int), got float"),
        ({"from_offset": {-1: 0}}, "from_offset: -1 is not a partition number"),
        ({"from_offset": {"0": 0}}, "from_offset: '0' is not a partition number"),
        ({"from_time": datetime(2025, 12, 2)}, "from_time: a naive datetime"),  # noqa: DTZ001
        ({"from_time": -1.0}, "from_time: -1.0 is not a time since 1970"),
        ({"from_time": math.nan}, "from_time: nan is not a time since 1970"),
        ({"from_time": "yesterday"}, "from_time: expected a datetime or seconds"),
        ({"from_offset": 0, "from_time": 0.0}, "from_offset, from_time: give one of them"),
        ({"connect_timeout_s": 0.0}, "connect_timeout_s: 0.0 is not positive"),
    ],
)
def test_a_refused_argument_is_named_at_the_call(arguments: dict[str, Any], message: str) -> None:
    # A copy: the parameter's dict is shared by every run of the test in this process.
    rest = dict(arguments)
    tenant = rest.pop("tenant", "acme")
    with pytest.raises(InvalidArgumentError) as refused:
        Client(bootstrap=NOWHERE).subscribe(tenant, **rest)
    assert isinstance(refused.value, ValueError)
    assert str(refused.value).startswith(message)
