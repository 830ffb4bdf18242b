"""Grant each process's principal its ACLs on a secure broker, as ``admin``.

Run by ``deploy/kafka/start --secure`` once the broker answers (with the repository
on ``PYTHONPATH``):

    python deploy/kafka/grant_acls.py 127.0.0.1:9092 --credentials DATA/credentials

The rules are :func:`schemas.kafka.acl_table.grants` for the names the processes'
settings give (``CTXSTREAM_TOPIC_PREFIX``, ``CTXSTREAM_APP_ID``,
``CTXSTREAM_SUMMARIZER_GROUP_ID``), sent in one CreateAcls request; creating a rule
that exists is a no-op, so every start grants them again. Rules granted before for
other names are left as they are. Exits 0 when the broker accepted every rule.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Final

from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.admin import CreateAclsRequest_v1
from aiokafka.protocol.api import Request

from schemas.kafka.acl_table import ADMIN_PRINCIPAL, DeploymentNames, Grant, grants
from schemas.kafka.security import client_security
from streams.projector_settings import ProjectorSettings
from summarizer_worker.settings import SummarizerSettings

# Kafka's protocol codes (org.apache.kafka.common.resource / acl).
RESOURCE_CODES: Final = {"topic": 2, "group": 3, "transactional-id": 5}
PATTERN_CODES: Final = {"literal": 3, "prefixed": 4}
OPERATION_CODES: Final = {"read": 3, "write": 4, "create": 5}
ALLOW: Final = 3
REQUEST_TIMEOUT_MS: Final = 15_000


Creation = tuple[int, str, int, str, str, int, int]


class CreateAcls(Request[CreateAclsRequest_v1]):  # type: ignore[misc]  # aiokafka is untyped
    """Every creation in one CreateAcls v1 request (aiokafka's own sends one per request)."""

    API_KEY = 30

    def __init__(self, creations: list[Creation]) -> None:
        self._creations = creations

    def build(self, request_struct_class: type[CreateAclsRequest_v1]) -> CreateAclsRequest_v1:
        """The request as the negotiated version's struct (v1: with the pattern type)."""
        return request_struct_class(self._creations)


def deployment_names() -> DeploymentNames:
    """The names the processes' settings give, read from the environment as they read it."""
    projector = ProjectorSettings()
    return DeploymentNames(
        topic_prefix=projector.topic_prefix,
        projector_app_id=projector.app_id,
        summarizer_group_id=SummarizerSettings().summarizer_group_id,
    )


def creation(principal: str, grant: Grant) -> Creation:
    """`grant` of `principal` as one entry of a CreateAcls request (any host)."""
    return (
        RESOURCE_CODES[grant.resource],
        grant.name,
        PATTERN_CODES[grant.pattern],
        f"User:{principal}",
        "*",
        OPERATION_CODES[grant.operation],
        ALLOW,
    )


async def grant_all(bootstrap: str, admin_password: str, names: DeploymentNames) -> list[str]:
    """Send every rule of `names`' table; the broker's refusals, one line each."""
    entries = [
        creation(principal, grant) for principal, rules in grants(names).items() for grant in rules
    ]
    client = AIOKafkaClient(
        bootstrap_servers=bootstrap,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **client_security(ADMIN_PRINCIPAL, admin_password),
    )
    await client.bootstrap()
    try:
        node = client.get_random_node()
        if node is None:
            return ["no broker in the cluster's metadata"]
        response = await client.send(node, CreateAcls(entries))
    finally:
        await client.close()
    return [
        f"{entry}: error {code}: {message}"
        for entry, (code, message) in zip(entries, response.creation_responses, strict=True)
        if code != 0
    ]


def main() -> int:
    """Parse the arguments and grant; the exit status says whether every rule holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("bootstrap", help="host:port[,host:port...]")
    parser.add_argument(
        "--credentials", type=Path, required=True, help="folder of one password file per user"
    )
    args = parser.parse_args()
    password = (args.credentials / ADMIN_PRINCIPAL).read_text().strip()
    names = deployment_names()
    refused = asyncio.run(grant_all(args.bootstrap, password, names))
    for line in refused:
        sys.stderr.write(f"grant_acls: refused {line}\n")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
