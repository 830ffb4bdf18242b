"""``ctxstream bench sink`` runs the sink on the real broker and PostgreSQL and reports its rows.

The oracle of the counts is the workload itself (every event a row; a memory for each event
with a text part) and the database read back here, never the benchmark's own counting.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from psycopg import sql

from ctxstream.bench.agents.stream import AgentsWorkload
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

EVENTS = 2_000
SESSIONS = 20
TABLES = ["event_rows", "memories", "memory_lexemes"]


def _texts(event: dict[str, Any]) -> Iterator[str]:
    compaction = event.get("actions", {}).get("compaction")
    content = compaction["compactedContent"] if compaction else event.get("content")
    for part in (content or {}).get("parts", []):
        yield part.get("text") or ""


def _with_text() -> int:
    """The workload's events holding a non-blank text: the memories of memory mode 'all'."""
    return sum(
        any(text.strip() for text in _texts(orjson.loads(value)["event"]))
        for _, value in AgentsWorkload(EVENTS, SESSIONS).records()
    )


@pytest.fixture
def kept_schemas(postgres_dsn: str) -> Iterator[list[str]]:
    """The schemas the benchmark kept; dropped when the test ends."""
    kept: list[str] = []
    yield kept
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for schema in kept:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _stored(dsn: str, schema: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {
            table: conn.execute(
                sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
            ).fetchone()[0]  # type: ignore[index]
            for table in TABLES
        } | {
            "sessions": conn.execute(
                sql.SQL("SELECT count(DISTINCT session_key) FROM {}").format(
                    sql.Identifier(schema, "event_rows")
                )
            ).fetchone()[0]  # type: ignore[index]
        }


async def test_the_benchmark_reports_the_rows_the_database_holds(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path: Path, kept_schemas: list[str]
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap,
        tmp_path,
        "sink",
        *("--events", str(EVENTS), "--sessions", str(SESSIONS), "--rounds", "2"),
        *("--batch-records", "300", "--keep", "--dsn", postgres_dsn),
    )
    rounds = figures["rounds"]
    kept_schemas.extend(r["schema"] for r in rounds)
    assert (figures["events"], figures["sessions"]) == (EVENTS, SESSIONS)
    assert [r["first"] for r in rounds] == ["raw", "sink"]
    assert sorted(figures["rows_per_s"]) == sorted(TABLES)
    memories = _with_text()
    assert 0 < memories < EVENTS
    for r in rounds:
        stored = _stored(postgres_dsn, r["schema"])
        assert r["rows"] == {t: stored[t] for t in TABLES}
        assert (stored["event_rows"], stored["memories"], stored["sessions"]) == (
            EVENTS,
            memories,
            SESSIONS,
        )
        assert stored["memory_lexemes"] > 0
        for table in TABLES:
            assert r["rows_per_s"][table] == pytest.approx(
                stored[table] / r["sink_seconds"], rel=1e-3, abs=0.1
            )
        assert r["sink_events_per_s"] == pytest.approx(EVENTS / r["sink_seconds"], rel=1e-3)
        # Written to three places, from the unrounded rates.
        assert r["ratio"] == pytest.approx(r["sink_events_per_s"] / r["raw_events_per_s"], abs=1e-3)
    medians = [figures[k] for k in ("sink_events_per_s", "raw_events_per_s")]
    assert medians == [
        pytest.approx(sum(r[k] for r in rounds) / 2, abs=0.1)
        for k in ("sink_events_per_s", "raw_events_per_s")
    ]
    last = stdout.splitlines()[-1].split()
    assert float(last[last.index("ratio") + 1]) == figures["ratio"]
