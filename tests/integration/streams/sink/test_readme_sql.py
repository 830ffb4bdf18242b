"""The README's SQL examples run as printed, against a session sunk from the real broker.

The session the README describes (a fact and its acknowledgement a summary masks, a rewound
invocation, a retried append) is appended to a fresh one-partition `events` topic in one Kafka
transaction and loaded by the sink into schema ``ctxstream`` of a fresh database, so the
README's queries (``SET search_path = ctxstream, public``) run verbatim through ``psql``; what
``psql`` prints must be the output the README prints under each query.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from schemas.codec import encode
from schemas.event import Event
from schemas.keys import SessionKey
from streams.sink.database import connect
from streams.sink.migrate import migrate
from tests.integration.streams.sink.sink_load import (
    Record,
    produce,
    running_sink,
    sink_settings,
    wait_caught_up,
)
from tests.support.events import envelope, rewind_event, summary_event, text_event
from tests.support.kafka import create_topics_for
from tests.support.readme_sql import printed_lines, sql_examples

README: Final = Path(__file__).resolve().parents[4] / "README.md"
KEY: Final = SessionKey("acme/support/u42/s7")
MARKER: Final = "-- end of a README example --"


def readme_session() -> list[Event]:
    """The README's example session, in the order it is appended."""
    retried = text_event("e5", "inv4", 106, "Where did I park?")
    return [
        text_event(
            "e1",
            "inv1",
            100,
            "I parked on level 3",
            actions={"state_delta": {"app:theme": "dark", "user:lang": "de", "n": 1}},
        ),
        text_event(
            "e2",
            "inv1",
            101,
            "Noted: level 3.",
            author="model",
            usage_metadata={"prompt_token_count": 120, "candidates_token_count": 30},
        ),
        text_event("e3", "inv2", 102, "And the car is blue", actions={"state_delta": {"n": 2}}),
        summary_event("s1", 100, 101, 103, "sum"),
        text_event("e4", "inv3", 104, "No, it was level 4"),
        rewind_event("r1", "inv3", 105),
        retried,
        retried,
    ]


@pytest.fixture
def database(postgres_dsn: str) -> Iterator[str]:
    """A fresh database for the test (dropped at the end): the DSN that names it."""
    name = f"test_readme_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(postgres_dsn, dbname=name)
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


async def test_the_readme_sql_examples_print_what_the_readme_shows(
    database: str, kafka_bootstrap: str, topic: str
) -> None:
    examples = sql_examples(README.read_text(encoding="utf-8"))
    assert len(examples) >= 6, "the README's SQL section lost its examples"
    await create_topics_for(kafka_bootstrap, topic, events_partitions=1, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, database, "ctxstream", partitions=1)
    settings = settings.model_copy(update={"memory_apps": "support"})
    records: list[Record] = [(KEY.encode(), encode(envelope(KEY, e))) for e in readme_session()]
    await produce(kafka_bootstrap, settings.topic("events"), [(records, True)])
    conn = await connect(database)
    try:
        await migrate(conn, "ctxstream")
        async with running_sink(settings):
            await wait_caught_up(conn, "ctxstream", kafka_bootstrap, settings.topic("events"))
    finally:
        await conn.close()
    # One psql session, as a reader pasting the blocks in order: a marker after each block
    # splits what it printed.
    script = "".join(f"{example.query}\n\\echo {MARKER}\n" for example in examples)
    ran = await asyncio.to_thread(
        subprocess.run,
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", database],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    printed = ran.stdout.split(f"{MARKER}\n")
    assert len(printed) == len(examples) + 1
    for example, output in zip(examples, printed, strict=False):
        assert printed_lines(output) == printed_lines(example.output), example.query
