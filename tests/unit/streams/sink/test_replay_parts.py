"""The pure parts of replay and switch: the switch's plan, its statements, positions."""

from __future__ import annotations

import pytest
from psycopg import sql

from streams.sink.errors import TargetSchemaError
from streams.sink.replay.errors import SwitchError
from streams.sink.replay.plan import (
    DEFAULT_STABLE_SCHEMA,
    Relation,
    compatible,
    plan_switch,
    stable_schema_name,
    switch_steps,
)
from streams.sink.replay.positions import lagging, rebuild_refusal, said_lag

INT = ("a", "integer", 0)
TEXT = ("b", "text", 100)


def view(*columns: tuple[str, str, int]) -> Relation:
    return Relation(is_view=True, columns=tuple(columns))


def table(*columns: tuple[str, str, int]) -> Relation:
    return Relation(is_view=False, columns=tuple(columns))


def said(statements: list[sql.Composed]) -> list[str]:
    return [s.as_string(None) for s in statements]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ((INT,), (INT,), True),
        ((INT,), (INT, TEXT), True),  # a column added at the end
        ((INT, TEXT), (INT,), False),  # a column gone
        ((INT,), (("a", "bigint", 0),), False),  # a type changed
        ((TEXT, INT), (INT, TEXT), False),  # the order changed
        ((INT,), (("z", "integer", 0),), False),  # renamed
        (((TEXT[0], "text", 950),), (TEXT,), False),  # another collation
    ],
)
def test_a_view_is_replaced_in_place_only_when_its_columns_lead_the_new_ones(
    old: tuple[tuple[str, str, int], ...], new: tuple[tuple[str, str, int], ...], expected: bool
) -> None:
    assert compatible(old, new) is expected


def test_the_plan_replaces_recreates_and_drops_each_stable_view_by_its_columns() -> None:
    stable = {
        "events": view(INT),
        "sessions": view(INT, TEXT),
        "gone": view(INT),
        "stable_target": table(TEXT),
    }
    target = {
        "events": view(INT, TEXT),
        "sessions": view(TEXT),
        "memories": table(INT),
        "sink_offsets": table(INT),
        "schema_migrations": table(INT),
    }

    plan = plan_switch("read", stable, target)

    assert (plan.replace, plan.recreate, plan.drop, plan.changed) == (
        ("events", "memories"),
        ("sessions",),
        ("gone",),
        ("events", "sessions"),  # a column added, a column gone: a prepared SELECT * breaks
    )
    same = plan_switch(
        "read", {"e": view(INT), "m": view(TEXT)}, {"e": view(INT), "m": table(TEXT)}
    )
    assert same.changed == ()  # a view of a table has the table's columns


def test_the_steps_lock_one_view_each_the_contended_first() -> None:
    stable = {"a": view(INT), "b": view(INT), "c": view(INT)}
    plan = plan_switch("read", stable, {"b": view(TEXT), "c": view(INT), "d": view(INT)})

    steps = switch_steps(plan, "read", "t2", first=["d", "x", "d"])

    assert [(name, said(statements)) for name, statements in steps] == [
        ("d", ['CREATE OR REPLACE VIEW "read"."d" AS SELECT * FROM "t2"."d"']),
        ("a", ['DROP VIEW "read"."a"']),
        ("b", ['DROP VIEW "read"."b"', 'CREATE VIEW "read"."b" AS SELECT * FROM "t2"."b"']),
        ("c", ['CREATE OR REPLACE VIEW "read"."c" AS SELECT * FROM "t2"."c"']),
    ]


def test_a_stable_schema_holding_tables_or_a_target_with_the_record_name_is_refused() -> None:
    with pytest.raises(SwitchError, match=r"schema 'ctx' holds tables \(event_rows\)"):
        plan_switch("ctx", {"event_rows": table(INT), "stable_target": table(TEXT)}, {})
    with pytest.raises(SwitchError, match="named 'stable_target'"):
        plan_switch("read", {}, {"stable_target": view(INT)})


def test_the_stable_schema_name_comes_from_the_environment_checked() -> None:
    assert stable_schema_name({}) == DEFAULT_STABLE_SCHEMA == "ctxstream_read"
    assert stable_schema_name({"CTXSTREAM_STABLE_SCHEMA": "read_2"}) == "read_2"
    with pytest.raises(TargetSchemaError):
        stable_schema_name({"CTXSTREAM_STABLE_SCHEMA": "Read-2"})


def test_lagging_counts_a_partition_never_written_as_at_zero() -> None:
    assert lagging({0: 5, 1: 2, 7: 9}, {0: 5, 1: 3, 2: 4, 3: 0}) == {1: (2, 3), 2: (0, 4)}
    assert lagging({0: 6}, {0: 5}) == {}
    assert said_lag(dict.fromkeys(range(6), (0, 1)), limit=2) == (
        "partition 0 at 0 < 1, partition 1 at 0 < 1 and 4 more"
    )


def test_a_rebuild_from_zero_is_refused_only_by_offsets_past_zero() -> None:
    assert rebuild_refusal("b", "p.events", {}) is None
    assert rebuild_refusal("b", "p.events", {0: 0, 1: 0}) is None
    refusal = rebuild_refusal("b", "p.events", {0: 0, 1: 7, 2: 3})
    assert refusal == (
        "schema 'b' already holds offsets of p.events (partition 1 at 7, partition 2 at 3); "
        "--from-offset 0 rebuilds only a schema that has none: resume it with "
        "`ctxstream sink --into b`, or rebuild into a new schema"
    )
