"""Where a target schema stands against a bar of offsets, and where a rebuild may start. Pure.

A position is a partition's next offset (``sink_offsets.next_offset``, or a log's end
offset); a partition the schema never wrote stands at 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

#: The only start a rebuild accepts: a session's statuses need its whole history.
FULL_REBUILD: Final = 0


def lagging(stored: Mapping[int, int], bar: Mapping[int, int]) -> dict[int, tuple[int, int]]:
    """The partitions whose stored position is below `bar`'s: partition -> (stored, bar).

    Example: ``lagging({0: 5}, {0: 5, 1: 3})`` is ``{1: (0, 3)}``; a partition of
    `stored` missing from `bar` is never lagging.
    """
    return {
        partition: (stored.get(partition, 0), end)
        for partition, end in sorted(bar.items())
        if stored.get(partition, 0) < end
    }


def said_lag(lag: Mapping[int, tuple[int, int]], *, limit: int = 4) -> str:
    """`lag` in words, its first `limit` partitions: ``partition 1 at 0 < 3, ...``."""
    shown = [f"partition {p} at {n} < {bar}" for p, (n, bar) in sorted(lag.items())[:limit]]
    more = len(lag) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def rebuild_refusal(schema: str, topic: str, stored: Mapping[int, int]) -> str | None:
    """Why `schema` cannot be rebuilt from offset 0, or None when it can.

    A rebuild from 0 needs every partition at 0 (or never written): a schema that
    already went past 0 holds rows a rebuild would write again, so the fence would
    refuse every batch; the caller means another schema, or a resume.
    """
    ahead = {p: n for p, n in sorted(stored.items()) if n > FULL_REBUILD}
    if not ahead:
        return None
    where = ", ".join(f"partition {p} at {n}" for p, n in list(ahead.items())[:4])
    return (
        f"schema {schema!r} already holds offsets of {topic} ({where}); --from-offset 0 "
        f"rebuilds only a schema that has none: resume it with `ctxstream sink --into {schema}`, "
        "or rebuild into a new schema"
    )
