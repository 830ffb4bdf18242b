"""How many partitions a topic has, asked of the broker once a minute per process, not per call.

Each subscription (and the HTTP API's start check before it) needs the
partition count of `projections`; asking the broker opens an admin client,
its connections and a metadata round trip each time. A topic's partition count
does not change while a deployment runs (ctxstream never adds partitions), so
a count found is kept for :data:`PARTITION_COUNT_TTL_S` and reused. A topic
the broker does not name (count 0) is not kept: it is asked again at once, so a
topic created meanwhile is found.
"""

from __future__ import annotations

import time
from typing import Final

from schemas.errors import TopicError
from schemas.kafka.admin import partition_count
from schemas.kafka.security import PLAINTEXT, ClientSecurity

#: How long a partition count found is reused before the broker is asked again.
PARTITION_COUNT_TTL_S: Final = 60.0
_known: dict[tuple[str, str], tuple[int, float]] = {}


async def known_partition_count(
    bootstrap: str, topic: str, *, security: ClientSecurity = PLAINTEXT
) -> int:
    """The partition count of `topic` on `bootstrap`; 0 when the broker names no such topic.

    Bound it in time and map the broker's failures with
    :func:`~ctxstream.broker_calls.broker_calls`.
    """
    now = time.monotonic()
    found = _known.get((bootstrap, topic))
    if found is not None and now - found[1] < PARTITION_COUNT_TTL_S:
        return found[0]
    try:
        count = await partition_count(bootstrap, topic, security=security)
    except TopicError:
        _known.pop((bootstrap, topic), None)
        return 0
    _known[(bootstrap, topic)] = (count, now)
    return count
