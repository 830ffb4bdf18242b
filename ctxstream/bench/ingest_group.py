"""What ``bench ingest`` reads of a projector group: committed offsets, assignment, owners.

Read from the broker with the admin client and the `partition-owners`
topic, never from the workers: the group's committed offsets (how far it has
folded), its members' assignments (is it stable, with every worker holding
partitions), and which worker process has restored each partition (the
newest signed claim of each, whose ``worker_id`` names its process id:
:func:`streams.native_engine.ownership.new_worker_id`).
"""

from __future__ import annotations

from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError

from streams.reads.owners import PartitionOwners


async def group_offsets(admin: AIOKafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    """The offsets `group` has committed (empty while its coordinator is not ready)."""
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
        return {}
    return {tp: meta.offset for tp, meta in offsets.items()}


async def stable_assignment(
    admin: AIOKafkaAdminClient, group: str, topic: str
) -> list[frozenset[int]] | None:
    """Each member's partitions of `topic` while `group` is stable; None while it is not."""
    responses: list[Any] = await admin.describe_consumer_groups([group])
    for response in responses:
        for described in response.to_object()["groups"]:
            if described["group"] != group:
                continue
            if described["error_code"] or described["state"] != "Stable":
                return None
            members = []
            for member in described["members"]:
                assignment = ConsumerProtocolMemberAssignment.decode(member["member_assignment"])
                members.append(
                    frozenset(tp.partition for tp in assignment.partitions() if tp.topic == topic)
                )
            return members
    return None


def claimant_pid(worker_id: str) -> int:
    """The process id a claim's ``worker_id`` (``<host>-<pid>-<random>``) names.

    Example: ``"box-1-2-4242-0a1b2c3d"`` -> 4242 (the host may hold dashes).
    """
    return int(worker_id.rsplit("-", 2)[1])


async def restored_owners(owners: PartitionOwners, partitions: int) -> dict[int, int] | None:
    """Each partition's claimant process id, newest claims; None while any is unclaimed."""
    await owners.refresh()
    found: dict[int, int] = {}
    for partition in range(partitions):
        claim = owners.owner(partition)
        if claim is None:
            return None
        found[partition] = claimant_pid(claim.worker_id)
    return found


def split_as_assigned(owners: dict[int, int], assignment: list[frozenset[int]]) -> bool:
    """Whether the claimants hold exactly the members' partition sets.

    True once every member has restored (and claimed) what it was assigned:
    grouping the partitions by claimant gives the assignment's sets.
    """
    by_pid: dict[int, set[int]] = {}
    for partition, pid in owners.items():
        by_pid.setdefault(pid, set()).add(partition)
    return sorted(map(sorted, by_pid.values())) == sorted(map(sorted, assignment))
