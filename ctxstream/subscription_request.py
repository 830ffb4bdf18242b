"""What a subscriber asks for, checked before anything connects: tenant, sessions, start. Pure.

:func:`subscription_request` turns the arguments of
:meth:`ctxstream.Client.subscribe` into a :class:`SubscriptionRequest` or
refuses them with an :class:`~ctxstream.errors.InvalidArgumentError` whose
message starts with the argument it names (``tenant: ...``,
``sessions[1]: ...``, ``from_offset: ...``).

Where a subscription starts is one of three (:data:`StartAt`): :class:`FromEnd`,
:class:`FromOffsets` or :class:`FromTime`; the table of arguments is in
``ctxstream/README.md`` (subscription_request.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias, TypeGuard

from ctxstream.errors import InvalidArgumentError
from schemas.errors import InvalidSessionKeyError, TenantMismatchError
from schemas.keys import (
    MAX_PART_LENGTH,
    SessionKey,
    TenantId,
    check_tenant_owns_session,
    parse_session_key,
)

OffsetArgument: TypeAlias = int | Mapping[int, int] | None
"""An offset of every partition, the next offset of each partition, or None (the end)."""
TimeArgument: TypeAlias = datetime | float | None
"""An aware datetime or seconds since the epoch (UTC), or None."""


@dataclass(frozen=True, slots=True)
class FromEnd:
    """Only snapshots committed after the subscription has found each partition's end."""


@dataclass(frozen=True, slots=True)
class FromOffsets:
    """From offset ``by_partition[p]`` of each partition ``p`` it names, `otherwise` elsewhere."""

    by_partition: Mapping[int, int]
    otherwise: int


@dataclass(frozen=True, slots=True)
class FromTime:
    """From the first record of each partition whose timestamp is at or after `timestamp_ms`."""

    timestamp_ms: int


StartAt: TypeAlias = FromEnd | FromOffsets | FromTime
"""Where a subscription starts reading each partition."""


@dataclass(frozen=True, slots=True)
class SubscriptionRequest:
    """A valid subscription: the tenant, its sessions to keep (None: all) and where to start."""

    tenant: TenantId
    sessions: frozenset[SessionKey] | None
    start: StartAt


def subscription_request(
    tenant: str,
    *,
    sessions: Iterable[str] | None = None,
    from_offset: OffsetArgument = None,
    from_time: TimeArgument = None,
) -> SubscriptionRequest:
    """The request these arguments of :meth:`ctxstream.Client.subscribe` make.

    Raises:
        InvalidArgumentError: An argument is refused; the message starts with its name.
    """
    valid_tenant = checked_tenant(tenant)
    return SubscriptionRequest(
        tenant=valid_tenant,
        sessions=checked_sessions(
            sessions, when_none="follows every session of the tenant", tenant=valid_tenant
        ),
        start=start_at(from_offset, from_time),
    )


def checked_tenant(tenant: object) -> TenantId:
    """`tenant` as a tenant id: a session key's first part, by the same rules.

    Raises:
        InvalidArgumentError: It is not one; the message starts with ``tenant:``.
    """
    if not isinstance(tenant, str):
        raise InvalidArgumentError(f"tenant: expected a string, got {type(tenant).__name__}")
    if len(tenant) > MAX_PART_LENGTH:
        raise InvalidArgumentError(f"tenant: {len(tenant)} characters, at most {MAX_PART_LENGTH}")
    if "/" in tenant:
        raise InvalidArgumentError(
            f"tenant: {tenant!r} contains '/'; a tenant id is a session key's first part"
        )
    # A tenant id follows the rules of a session key's first part: checked on a key made of it.
    try:
        return parse_session_key(f"{tenant}/app/user/session").tenant
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"tenant: {exc.problem}") from exc


def checked_sessions(
    sessions: Iterable[str] | None, *, when_none: str, tenant: TenantId | None = None
) -> frozenset[SessionKey] | None:
    """`sessions` as keys, each checked (and owned by `tenant`, when given); None stays None.

    Raises:
        InvalidArgumentError: One string instead of a collection, an empty
            collection (the message says `when_none`: what None does), or an
            entry that is no session key (of `tenant`); the message starts with
            ``sessions`` or ``sessions[i]``.
    """
    if sessions is None:
        return None
    if isinstance(sessions, str | bytes):
        raise InvalidArgumentError("sessions: expected a collection of session keys, got one")
    keys = list(sessions)
    if not keys:
        raise InvalidArgumentError(f"sessions: empty; None {when_none}")
    for index, key in enumerate(keys):
        if not isinstance(key, str):
            raise InvalidArgumentError(
                f"sessions[{index}]: expected a session key, got {type(key).__name__}"
            )
        try:
            if tenant is None:
                parse_session_key(key)
            else:
                check_tenant_owns_session(tenant, key)
        except (InvalidSessionKeyError, TenantMismatchError) as exc:
            raise InvalidArgumentError(f"sessions[{index}]: {exc}") from exc
    return frozenset(SessionKey(key) for key in keys)


def start_at(from_offset: OffsetArgument, from_time: TimeArgument) -> StartAt:
    """Where reading starts for these arguments, as the table above gives (a replay's too).

    Raises:
        InvalidArgumentError: An argument is refused, or both are given; the
            message starts with the argument's name.
    """
    if from_offset is not None and from_time is not None:
        raise InvalidArgumentError(
            "from_offset, from_time: give one of them (or neither, for new snapshots only)"
        )
    if from_time is not None:
        return FromTime(_timestamp_ms(from_time))
    if from_offset is None:
        return FromEnd()
    if isinstance(from_offset, Mapping):
        return FromOffsets(
            {
                _partition(partition): _offset(f"from_offset[{partition!r}]", offset)
                for partition, offset in from_offset.items()
            },
            otherwise=0,
        )
    if not _is_whole(from_offset):
        raise InvalidArgumentError(
            "from_offset: expected an offset or a mapping of partition to offset, "
            f"got {type(from_offset).__name__}"
        )
    return FromOffsets({}, otherwise=_offset("from_offset", from_offset))


def _is_whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _partition(partition: object) -> int:
    if not _is_whole(partition) or partition < 0:
        raise InvalidArgumentError(f"from_offset: {partition!r} is not a partition number")
    return partition


def _offset(name: str, offset: object) -> int:
    if not _is_whole(offset):
        raise InvalidArgumentError(f"{name}: expected an offset (int), got {type(offset).__name__}")
    if offset < 0:
        raise InvalidArgumentError(f"{name}: {offset} is negative; 0 reads from the beginning")
    return offset


def _timestamp_ms(from_time: object) -> int:
    if isinstance(from_time, datetime):
        if from_time.tzinfo is None or from_time.utcoffset() is None:
            raise InvalidArgumentError(
                "from_time: a naive datetime; give its timezone, e.g. datetime.now(UTC)"
            )
        seconds = from_time.timestamp()
    elif isinstance(from_time, int | float) and not isinstance(from_time, bool):
        seconds = float(from_time)
    else:
        raise InvalidArgumentError(
            "from_time: expected a datetime or seconds since the epoch, "
            f"got {type(from_time).__name__}"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(f"from_time: {seconds!r} is not a time since 1970")
    # Records carry whole milliseconds: the first at or after `seconds` is at its ceiling.
    return math.ceil(seconds * 1000)
