"""Which statements point a stable schema's views at a target schema. Pure.

A stable view is ``SELECT * FROM <target>.<name>`` for every table and view a reader of
the target may read (all but the sink's bookkeeping). An existing view is replaced in
place (``CREATE OR REPLACE VIEW``: same OID, readers wait and never fail) when its columns
are a prefix of the new ones, as PostgreSQL allows; else dropped and created again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from streams.sink.replay.errors import SwitchError
from streams.sink.target_schema import target_schema

#: The stable schema `ctxstream db switch` and `ctxstream up` keep (distinct from every target).
DEFAULT_STABLE_SCHEMA: Final = "ctxstream_read"
#: The stable schema's one table: which target its views read, since when.
RECORD_TABLE: Final = "stable_target"
#: The target's bookkeeping, never a stable view (``consistent_as_of`` shows the offsets).
BOOKKEEPING: Final = frozenset({"schema_migrations", "sink_offsets"})

Column = tuple[str, str, int]
"""A column as the catalog says: name, type with its modifier (``format_type``), collation."""


@dataclass(frozen=True, slots=True)
class Relation:
    """A table or view of a schema, with its columns in order."""

    is_view: bool
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class SwitchPlan:
    """What a switch does to each stable view, by name (each tuple sorted)."""

    replace: tuple[str, ...]
    """Created, or replaced in place: absent, or its columns a prefix of the target's."""
    recreate: tuple[str, ...]
    """Dropped and created again: its columns differ from the target's."""
    drop: tuple[str, ...]
    """Dropped: the target has no such relation."""
    changed: tuple[str, ...] = ()
    """The views that exist and whose columns change (recreated, or columns added): a
    reader's prepared ``SELECT *`` of one fails until it is prepared again."""


def stable_schema_name(environ: Mapping[str, str]) -> str:
    """The stable schema: ``CTXSTREAM_STABLE_SCHEMA`` in `environ`, else the default.

    Raises:
        TargetSchemaError: the name is not one a schema of the sink may have.
    """
    return target_schema(environ.get("CTXSTREAM_STABLE_SCHEMA", DEFAULT_STABLE_SCHEMA))


def readable(target: Mapping[str, Relation]) -> dict[str, Relation]:
    """The relations of `target` the stable schema shows: all but :data:`BOOKKEEPING`."""
    return {name: rel for name, rel in target.items() if name not in BOOKKEEPING}


def compatible(old: tuple[Column, ...], new: tuple[Column, ...]) -> bool:
    """Whether a view of `old` columns may be replaced in place by one of `new` columns.

    Example: ``(a int)`` -> ``(a int, b text)`` may; ``(a int)`` -> ``(a bigint)`` may not.
    """
    return new[: len(old)] == old


def plan_switch(
    stable_schema: str, stable: Mapping[str, Relation], target: Mapping[str, Relation]
) -> SwitchPlan:
    """The plan pointing `stable`'s views at `target`'s readable relations.

    Raises:
        SwitchError: `stable` holds a table besides :data:`RECORD_TABLE` (a target schema,
            or someone's data: never overwritten), or `target` has a relation of that name.
    """
    tables = sorted(n for n, rel in stable.items() if not rel.is_view and n != RECORD_TABLE)
    if tables:
        raise SwitchError(
            f"schema {stable_schema!r} holds tables ({', '.join(tables[:4])}), so it is not a "
            "stable schema (which holds only views and its record): choose another --stable name"
        )
    shown = readable(target)
    if RECORD_TABLE in shown:
        raise SwitchError(f"the target has a relation named {RECORD_TABLE!r}, the stable record")
    views = {n: rel for n, rel in stable.items() if rel.is_view}
    recreate = sorted(
        n for n in shown if n in views and not compatible(views[n].columns, shown[n].columns)
    )
    return SwitchPlan(
        replace=tuple(sorted(n for n in shown if n not in recreate)),
        recreate=tuple(recreate),
        drop=tuple(sorted(n for n in views if n not in shown)),
        changed=tuple(
            sorted(n for n in shown if n in views and views[n].columns != shown[n].columns)
        ),
    )


def switch_steps(
    plan: SwitchPlan, stable: str, target: str, first: Sequence[str] = ()
) -> list[tuple[str, list[sql.Composed]]]:
    """The DDL of `plan` per stable view: the views named in `first` first, then plan order.

    Each step's statements lock its one view. `first` is where the switch met readers last
    time: taking those views first follows the readers' own order, which closes no cycle.
    """
    steps: dict[str, list[sql.Composed]] = {}
    for name in plan.drop:
        steps[name] = [sql.SQL("DROP VIEW {}").format(sql.Identifier(stable, name))]
    for name in plan.recreate:
        steps[name] = [
            sql.SQL("DROP VIEW {}").format(sql.Identifier(stable, name)),
            sql.SQL("CREATE VIEW {} AS SELECT * FROM {}").format(
                sql.Identifier(stable, name), sql.Identifier(target, name)
            ),
        ]
    for name in plan.replace:
        steps[name] = [
            sql.SQL("CREATE OR REPLACE VIEW {} AS SELECT * FROM {}").format(
                sql.Identifier(stable, name), sql.Identifier(target, name)
            )
        ]
    ahead = [name for name in dict.fromkeys(first) if name in steps]
    return [(name, steps[name]) for name in [*ahead, *(n for n in steps if n not in ahead)]]
