"""A count's noun agrees with it: the lines commands print never say "1 compactions"."""

from __future__ import annotations

from schemas.counted import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "compaction") == "1 compaction"
    assert counted(0, "compaction") == "0 compactions"
    assert counted(2, "dead letter") == "2 dead letters"
    assert counted(1, "summary", "summaries") == "1 summary"
    assert counted(7, "summary", "summaries") == "7 summaries"
