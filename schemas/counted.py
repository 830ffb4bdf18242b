"""A count and its noun, singular or plural as the count needs: ``1 session``, ``2 sessions``. Pure.

Every line a command prints with a count goes through :func:`counted`, so
none says "1 compactions".
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, the noun in the plural unless `count` is 1.

    Args:
        count: How many.
        noun: The singular noun (may be several words: ``dead letter``).
        plural: The plural when adding ``s`` is wrong (``summaries``).

    Example: ``counted(1, "compaction")`` -> ``1 compaction``;
    ``counted(3, "summary", "summaries")`` -> ``3 summaries``.
    """
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
