"""When the services of ``ctxstream up`` are ready, and which ports they may take.

The projector is ready once this run's projector (a worker id no claim named before
it started, :func:`claims_ready`) has claimed every `events` partition at its read
address and answers a context read of a probe session with no records; the HTTP
API once ``/openapi.json`` answers. A port another process holds is refused before
anything starts, naming the holder and the variable that moves it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import aiohttp
from aiokafka.errors import KafkaError

from ctxstream.cli.port_holder import holder, is_taken, port_taken, socket_inodes
from ctxstream.cli.up_services import Child, ServiceStartError, ready
from ctxstream.errors import ContextReadError
from ctxstream.reads import ContextReads
from streams.projector_settings import ProjectorSettings
from streams.reads.claim import PartitionClaim
from streams.reads.owners import PartitionOwners

HOST: Final = "127.0.0.1"
CLAIMED_S: Final = 120.0  # a cold projector: group join, restore, one claim per partition
SERVING_S: Final = 60.0  # the server's imports, the api-keys topic, its producer
#: The session whose context read shows the projector serves reads (it has no records).
PROBE_SESSION: Final = "ctxstream/up/probe/ready"
PROBE_READ_S: Final = 5.0
#: The broker's port variables (read by ``deploy/kafka/start``) and their defaults.
BROKER_PORTS: Final = {"CTXSTREAM_KAFKA_PORT": "9092", "CTXSTREAM_KAFKA_CONTROLLER_PORT": "9093"}


async def stale_workers(settings: ProjectorSettings) -> frozenset[str]:
    """The worker ids of the claims on `partition-owners` before this run's projector starts.

    A previous run's projector left its claims there, at the same address when
    ``CTXSTREAM_QUERY_PORT`` is fixed: none of them may count as this run's.
    """
    owners = PartitionOwners(settings)
    try:
        await owners.refresh()
        return frozenset(
            claim.worker_id
            for p in range(settings.events_partitions)
            if (claim := owners.owner(p)) is not None
        )
    except KafkaError as exc:
        reason = str(exc) or type(exc).__name__
        raise ServiceStartError(service="projector", reason=f"claims unreadable: {reason}") from exc
    finally:
        await owners.close()


def claimsready(
    claims: Sequence[PartitionClaim | None], address: str, stale: frozenset[str]
) -> bool:
    """Whether one projector of this run, reachable at `address`, has claimed every partition.

    Every claim must name `address` and one worker id, and that id must not be
    among the `stale` ones (the claims read before this run's projector
    started): worker ids are unique per engine run, so such a claim is this
    run's.
    """
    workers = {claim.worker_id for claim in claims if claim is not None}
    return (
        all(claim is not None and claim.address == address for claim in claims)
        and len(workers) == 1
        and workers.isdisjoint(stale)
    )


async def claimed(
    settings: ProjectorSettings, address: str, stale: frozenset[str], projector: Child
) -> None:
    """Wait until this run's projector owns every `events` partition and answers a read.

    Raises:
        ServiceStartError: The projector exited, or was not ready in time.
    """
    owners = PartitionOwners(settings)
    reads = ContextReads(settings)

    async def claimed() -> bool:
        await owners.refresh()
        claims = [owners.owner(p) for p in range(settings.events_partitions)]
        return claimsready(claims, address, stale)

    async def answering() -> bool:
        try:
            await reads.context(
                PROBE_SESSION,
                agent=None,
                branch=None,
                include_contents="none",
                min_offset=None,
                timeout_s=PROBE_READ_S,
            )
        except LookupError:
            pass  # a session with no records, said so: the read plane answered
        except ContextReadError:
            return False
        return True

    try:
        await ready("projector", claimed, projector, CLAIMED_S)
        await ready("projector", answering, projector, SERVING_S)
    finally:
        await owners.close()
        await reads.close()


async def answering(url: str, server: Child) -> None:
    """Wait until the server's OpenAPI document answers.

    Raises:
        ServiceStartError: The server exited, or did not answer in time.
    """
    async with aiohttp.ClientSession() as http:

        async def answers() -> bool:
            try:
                async with http.get(f"{url}/openapi.json") as response:
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await ready("the HTTP API", answers, server, SERVING_S)


def check_free(port: int) -> None:
    """Raise :class:`ServiceStartError` unless `port` can be bound on 127.0.0.1 now."""
    if is_taken(port):
        reason = port_taken(port, "--http-port <another port> (or CTXSTREAM_HTTP_PORT)")
        raise ServiceStartError(service="the HTTP API", reason=reason)


def check_broker_ports(kafka_data: Path) -> None:
    """Refuse a broker port another process holds, naming it and the variable that moves it.

    The broker of `kafka_data` itself (left running by a run that did not
    stop it) may hold them: ``deploy/kafka/start`` then only prints its address.

    Raises:
        ServiceStartError: A port is taken by another process.
    """
    ours = _pid_in(kafka_data / "kafka.pid")
    for variable, default in BROKER_PORTS.items():
        text = os.environ.get(variable, default)
        if not text.isdigit() or not 0 < int(text) < 65_536:
            continue  # deploy/kafka/start refuses it, naming the variable
        port = int(text)
        if not is_taken(port):
            continue
        held = holder(socket_inodes(port))
        if ours is not None and held is not None and held[0] == ours:
            continue
        reason = port_taken(port, f"{variable}=<another port>")
        raise ServiceStartError(service="kafka", reason=reason)


def _pid_in(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago (the system's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port
