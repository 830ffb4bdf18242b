"""Wait until a Kafka cluster answers a metadata request listing enough brokers.

Used by `deploy/kafka/start` and `deploy/kafka/cluster` after the log says
`Kafka Server started`: that line only means the process is up, while a
successful DescribeCluster (a metadata request) means clients can use it.

    python deploy/kafka/wait_ready.py 127.0.0.1:9092 --brokers 1 --timeout 60
    python deploy/kafka/wait_ready.py 127.0.0.1:9092 --sasl-user admin --sasl-password-file F

With ``--sasl-user`` it authenticates by SASL/SCRAM-SHA-512 (a ``--secure`` broker).

Exits 0 when ready, 1 with the last error on stderr when the time is up.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

logger = logging.getLogger("wait_ready")

POLL_INTERVAL_S = 0.25
ATTEMPT_TIMEOUT_S = 5.0  # one DescribeCluster against a live broker takes milliseconds


async def broker_count(bootstrap: str, sasl: dict[str, Any]) -> int:
    """The number of brokers the cluster's metadata lists right now."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=int(ATTEMPT_TIMEOUT_S * 1000), **sasl
    )
    try:
        await admin.start()
        cluster = await admin.describe_cluster()
    finally:
        await admin.close()
    return len(cluster["brokers"])


async def wait_ready(
    bootstrap: str, brokers: int, timeout_s: float, sasl: dict[str, Any] | None = None
) -> bool:
    """Poll until the cluster lists at least `brokers` brokers or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    last = "no attempt yet"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            logger.error("not ready bootstrap=%s after=%.0fs last=%s", bootstrap, timeout_s, last)
            return False
        try:
            seen = await asyncio.wait_for(
                broker_count(bootstrap, sasl or {}), min(remaining, ATTEMPT_TIMEOUT_S * 2)
            )
        except (KafkaError, OSError, TimeoutError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if seen >= brokers:
                return True
            last = f"{seen} of {brokers} brokers registered"
        await asyncio.sleep(POLL_INTERVAL_S)


def main() -> int:
    """Parse the arguments and wait; the exit status says whether the cluster is ready."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("bootstrap", help="host:port[,host:port...]")
    parser.add_argument("--brokers", type=int, default=1, help="brokers that must be listed")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    parser.add_argument("--sasl-user", help="authenticate as this SCRAM-SHA-512 user")
    parser.add_argument("--sasl-password-file", type=Path, help="that user's password")
    args = parser.parse_args()
    sasl: dict[str, Any] = {}
    if args.sasl_user:
        sasl = {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": args.sasl_user,
            "sasl_plain_password": args.sasl_password_file.read_text().strip(),
        }
    logging.basicConfig(level=logging.WARNING, format="wait_ready: %(message)s")
    # aiokafka logs every refused connection at ERROR; the retry loop reports the last one.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    ready = asyncio.run(wait_ready(args.bootstrap, args.brokers, args.timeout, sasl))
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main())
