"""A tenant's projection snapshots as server-sent events, each id a position to resume from.

:func:`stream_plan` settles everything a subscription can refuse before the
stream starts, so each refusal is an error answer with its status: the key's
tenant (403), the sessions asked for (422, or 403 for another tenant's), the
start (422) and the topic's reach (503). :func:`snapshot_events` then follows
the snapshots with :meth:`ctxstream.Client.subscribe` from exactly the
offsets the plan resolved, and sends each as one event::

    event: snapshot
    id: 0:17,1:42
    data: {"partition":1,"offset":41,"snapshot":{...}}

More in ``ctxstream/api/README.md`` (snapshot_stream.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from aiokafka.errors import KafkaError

from ctxstream.api.auth import INVALID_KEY, Authenticator, Caller, require_tenant, session_of
from ctxstream.api.errors import ApiError, api_error_of
from ctxstream.api.positions import Position, format_position, parse_start, start_offsets
from ctxstream.api.projection_bounds import projection_bounds
from ctxstream.api.sse import sse_event
from ctxstream.client import Client
from ctxstream.subscription import CONNECT_TIMEOUT_S
from schemas.codec import encode
from schemas.errors import CtxstreamError
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey, TenantId


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """A subscription every check has passed: whose, which sessions, from where."""

    caller: Caller
    tenant: TenantId
    sessions: tuple[SessionKey, ...] | None
    start: Position


async def stream_plan(
    settings: KafkaSettings,
    caller: Caller,
    tenant: str,
    sessions: Sequence[str] | None,
    start: tuple[str, str] | None,
) -> StreamPlan:
    """The subscription `caller` asks for, with its start resolved on the topic.

    `start` is where the caller asked to start, and under which name
    (``Last-Event-ID`` or ``from_offset``): an offset of every partition or a
    position (:func:`ctxstream.api.positions.parse_start`); None: from now on.

    Raises:
        ApiError: ``forbidden`` (another tenant, or another tenant's session),
            ``invalid-argument`` (a bad session key, a start naming a partition
            the topic lacks) or ``unavailable`` (the broker, the topic).
    """
    require_tenant(caller, tenant)
    keys: tuple[SessionKey, ...] | None = None
    if sessions:
        checked = []
        for index, key in enumerate(sessions):
            try:
                checked.append(session_of(caller, key))
            except ApiError as exc:
                if exc.code != "invalid-argument":
                    raise
                raise ApiError(exc.code, f"sessions[{index}]: {exc.reason}") from exc
        keys = tuple(checked)
    try:
        name, text = start if start is not None else ("from_offset", None)
        wanted = parse_start(text, name=name) if text is not None else None
        beginnings, ends = await projection_bounds(settings, timeout_s=CONNECT_TIMEOUT_S)
        offsets = start_offsets(wanted, beginnings, ends, name=name)
    except CtxstreamError as exc:
        raise api_error_of(exc) from exc
    return StreamPlan(caller, caller.tenant, keys, offsets)


async def snapshot_events(
    client: Client, auth: Authenticator, plan: StreamPlan
) -> AsyncGenerator[bytes, None]:
    """The plan's snapshots as events, until the caller goes, its key is revoked or it fails."""
    position = dict(plan.start)
    items = client.subscribe(plan.tenant, sessions=plan.sessions, from_offset=dict(position))
    async with contextlib.aclosing(items):
        try:
            async for item in items:
                if not auth.still_live(plan.caller):
                    yield error_event(ApiError("unauthorized", INVALID_KEY))
                    return
                position[item.partition] = item.next_offset
                data = item.to_json().decode()
                kind = "snapshot" if item.snapshot is not None else "deleted"
                yield sse_event(kind, data, event_id=format_position(position))
        except (CtxstreamError, KafkaError) as exc:
            yield error_event(api_error_of(exc))


def error_event(error: ApiError) -> bytes:
    """The last event of a stream that failed: its error body."""
    return sse_event("error", encode(error.body).decode())
