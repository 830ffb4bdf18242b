"""What ``db switch`` and a rebuild refuse: one line, exit status 1 (2 for a bad argument).

A switch to a schema behind the log, behind the schema switched from, missing, at the wrong
version, or onto a schema holding tables; a rebuild from 0 of a schema past 0, or into a
stable schema. Also where ``ctxstream up`` leaves the stable views (``adopt_stable``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from psycopg import sql

from ctxstream.cli.up_sink import migrate_schema
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.migration_files import latest_version, load_migrations
from streams.sink.replay.switch import stable_target
from streams.sink.settings import SinkSettings
from tests.integration.streams.sink.replay_commands import ctxstream, lines
from tests.integration.streams.sink.sink_load import (
    produce,
    running_sink,
    session_event,
    sink_settings,
    wait_caught_up,
)
from tests.support.kafka import create_topics_for

SHIPPED = latest_version(load_migrations())


async def views_of(conn: Connection, schema: str) -> list[str]:
    cursor = await conn.execute(
        "SELECT viewname FROM pg_views WHERE schemaname = %s ORDER BY viewname", (schema,)
    )
    return [str(row[0]) for row in await cursor.fetchall()]


async def set_offset(conn: Connection, schema: str, topic: str, partition: int, at: int) -> None:
    """Store `at` as `schema`'s next offset of `partition`, by hand (the refusals' setup)."""
    await conn.execute(
        sql.SQL(
            "INSERT INTO {} (topic, partition, next_offset) VALUES (%s, %s, %s)"
            " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset"
        ).format(sql.Identifier(schema, "sink_offsets")),
        (topic, partition, at),
    )


async def loaded(
    conn: Connection, bootstrap: str, topic: str, dsn: str, schema: str
) -> SinkSettings:
    """A deployment `topic` with 2 partitions, 10 records, and `schema` holding them all."""
    await create_topics_for(bootstrap, topic, events_partitions=2, partitions=1)
    settings = sink_settings(bootstrap, topic, dsn, schema, partitions=2)
    await produce(
        bootstrap, settings.topic("events"), [([session_event(s, 1) for s in range(10)], True)]
    )
    await migrate(conn, schema)
    async with running_sink(settings):
        await wait_caught_up(conn, schema, bootstrap, settings.topic("events"))
    return settings


async def test_a_switch_refuses_a_schema_behind_the_log_and_leaves_the_views_alone(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    live, behind, stable = make_schema(), make_schema(), make_schema()
    settings = await loaded(conn, kafka_bootstrap, topic, postgres_dsn, live)
    await migrate(conn, behind)
    assert (await ctxstream(settings, "db", "switch", live, "--stable", stable)).returncode == 0

    refused = await ctxstream(settings, "db", "switch", behind, "--stable", stable)

    assert refused.returncode == 1
    events = settings.topic("events")
    (line,) = lines(refused)
    assert line.startswith(
        f"ctxstream db switch: schema '{behind}' is behind the log's end on {events}: partition "
    )
    recorded = await stable_target(conn, stable)
    assert recorded is not None
    assert recorded.target == live
    cursor = await conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(stable, "events"))
    )
    assert await cursor.fetchone() == (10,)


async def test_a_switch_refuses_a_schema_behind_the_one_switched_from_unless_forced(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    live, other, stable = make_schema(), make_schema(), make_schema()
    settings = await loaded(conn, kafka_bootstrap, topic, postgres_dsn, live)
    events = settings.topic("events")
    await migrate(conn, other)
    async with running_sink(settings.model_copy(update={"sink_schema": other})):
        ends = await wait_caught_up(conn, other, kafka_bootstrap, events)
    assert (await ctxstream(settings, "db", "switch", live, "--stable", stable)).returncode == 0
    partition = min(ends)
    await set_offset(conn, live, events, partition, ends[partition] + 5)  # live claims more

    refused = await ctxstream(settings, "db", "switch", other, "--stable", stable)
    forced = await ctxstream(settings, "db", "switch", other, "--stable", stable, "--force")

    assert refused.returncode == 1
    assert lines(refused) == [
        f"ctxstream db switch: schema '{other}' is behind '{live}' on {events}: "
        f"partition {partition} at {ends[partition]} < {ends[partition] + 5}"
    ]
    assert forced.returncode == 0
    assert forced.stdout.startswith(f"stable schema {stable} reads {other} now (was {live}; ")
    recorded = await stable_target(conn, stable)
    assert recorded is not None
    assert (recorded.target, recorded.version) == (other, SHIPPED)


async def test_a_switch_refuses_missing_and_wrong_version_schemas_and_table_holders(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    missing, older, target, stable = make_schema(), make_schema(), make_schema(), make_schema()
    settings = await loaded(conn, kafka_bootstrap, topic, postgres_dsn, target)
    await migrate(conn, older, up_to=SHIPPED - 1)

    runs = [
        await ctxstream(settings, "db", "switch", missing, "--stable", stable, "--force"),
        await ctxstream(settings, "db", "switch", older, "--stable", stable, "--force"),
        await ctxstream(settings, "db", "switch", target, "--stable", older, "--force"),
        await ctxstream(settings, "db", "switch", target, "--stable", target, "--force"),
    ]

    # The message names the first four tables of the schema, as the catalog lists them.
    cursor = await conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (older,)
    )
    held = [str(row[0]) for row in await cursor.fetchall()]
    assert len(held) > 4
    assert [r.returncode for r in runs] == [1, 1, 1, 1]
    assert [lines(r) for r in runs] == [
        [
            f"ctxstream db switch: schema '{missing}' has no migrations; this code expects "
            f"version {SHIPPED}: run `ctxstream db migrate --schema {missing}`"
        ],
        [
            f"ctxstream db switch: schema '{older}' is at version {SHIPPED - 1}, older than the "
            f"{SHIPPED} this code expects: run `ctxstream db migrate --schema {older}`"
        ],
        [
            f"ctxstream db switch: schema '{older}' holds tables ({', '.join(held[:4])}), so it "
            "is not a stable schema (which holds only views and its record): choose another "
            "--stable name"
        ],
        [f"ctxstream db switch: the stable schema '{target}' cannot be its own target"],
    ]
    assert await stable_target(conn, stable) is None
    assert await views_of(conn, stable) == []
    assert "stable_target" not in await views_of(conn, older)


async def test_a_switch_that_changes_a_views_columns_needs_the_readers_consent(
    conn: Connection, make_schema: Callable[[], str], postgres_dsn: str
) -> None:
    target, stable = make_schema(), make_schema()
    await migrate(conn, target)
    settings = sink_settings("127.0.0.1:1", "unused", postgres_dsn, target, partitions=1)
    assert (
        await ctxstream(settings, "db", "switch", target, "--stable", stable, "--force")
    ).returncode == 0
    # The stable view as an older migration made it: fewer columns.
    await conn.execute(
        sql.SQL("DROP VIEW {0}; CREATE VIEW {0} AS SELECT session_key, tenant FROM {1}").format(
            sql.Identifier(stable, "events"), sql.Identifier(target, "events")
        )
    )

    refused = await ctxstream(settings, "db", "switch", target, "--stable", stable, "--force")
    allowed = await ctxstream(
        settings, "db", "switch", target, "--stable", stable, "--force", "--columns-may-change"
    )

    assert refused.returncode == 1
    assert lines(refused) == [
        f"ctxstream db switch: the columns of events in '{stable}' would change (schema "
        f"'{target}' is at another migration than they were made for): a reader's prepared "
        "SELECT * of them fails until prepared again; switch when readers can take that, with "
        "--columns-may-change"
    ]
    assert allowed.returncode == 0
    cursor = await conn.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = 'events'",
        (stable,),
    )
    assert await cursor.fetchone() == (14,)  # the target's events view: every column again


async def test_a_rebuild_from_zero_refuses_a_schema_past_zero_and_a_stable_schema(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    live, started, stable = make_schema(), make_schema(), make_schema()
    settings = await loaded(conn, kafka_bootstrap, topic, postgres_dsn, live)
    events = settings.topic("events")
    await migrate(conn, started)
    await set_offset(conn, started, events, 0, 0)
    await set_offset(conn, started, events, 1, 7)
    assert (await ctxstream(settings, "db", "switch", live, "--stable", stable)).returncode == 0

    past = await ctxstream(settings, "sink", "--into", started, "--from-offset", "0")
    into_stable = await ctxstream(settings, "sink", "--into", stable, "--until-caught-up")
    not_zero = await ctxstream(settings, "sink", "--into", started, "--from-offset", "5")
    both = await ctxstream(settings, "sink", "--into", started, "--schema", live)

    assert (past.returncode, into_stable.returncode) == (1, 1)
    assert lines(past) == [
        f"ctxstream sink: schema '{started}' already holds offsets of {events} (partition 1 at "
        "7); --from-offset 0 rebuilds only a schema that has none: resume it with "
        f"`ctxstream sink --into {started}`, or rebuild into a new schema"
    ]
    assert lines(into_stable) == [
        f"ctxstream sink: schema '{stable}' is a stable schema (it holds stable_target): "
        "rebuild into another schema, then `ctxstream db switch` to it"
    ]
    assert (not_zero.returncode, both.returncode) == (2, 2)
    assert not_zero.stderr.splitlines()[-1] == (
        "ctxstream sink: error: argument --from-offset: 5: only 0 is accepted, since each "
        "session's statuses need its whole history (streams/sink/README.md, 'Replay and switch')"
    )
    assert lines(both) == [
        "ctxstream sink: --into and --schema both name the target schema: give one"
    ]
    cursor = await conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(started, "event_rows"))
    )
    assert await cursor.fetchone() == (0,)
    cursor = await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (stable,))
    assert await cursor.fetchall() == [("stable_target",)]  # nothing migrated into it


async def test_up_points_the_stable_views_at_its_target_unless_switched_elsewhere(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second, stable = make_schema(), make_schema(), make_schema()
    monkeypatch.setenv("CTXSTREAM_STABLE_SCHEMA", stable)
    await migrate_schema(postgres_dsn, first)  # a fresh install
    fresh = await stable_target(conn, stable)
    await migrate_schema(postgres_dsn, second)  # another up, while first still exists
    kept = await stable_target(conn, stable)
    await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(first)))
    await migrate_schema(postgres_dsn, second)  # first is gone: second is adopted
    adopted = await stable_target(conn, stable)

    assert fresh is not None
    assert kept is not None
    assert adopted is not None
    assert (fresh.target, kept.target, adopted.target) == (first, first, second)
    assert "sessions" in await views_of(conn, stable)
