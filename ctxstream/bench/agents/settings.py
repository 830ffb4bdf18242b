"""The projector settings the agents workload needs: its apps' compaction and view agents. Pure.

A benchmark that folds the workload gives the projector each ``tenant/app``'s
compaction config (``compaction_overrides``) and root agent
(``view_agent_names``) for every tenant prefix it appends under: in process
with :func:`with_workload_apps`, to a worker process with :func:`workload_env`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import orjson

from ctxstream.bench.agents.apps import compaction_overrides, view_agent_names
from streams.projector_settings import ProjectorSettings

#: The tenant prefix of ``bench fold`` and ``bench ingest``.
DEFAULT_PREFIX: Final = "tenant"


def with_workload_apps(settings: ProjectorSettings, prefixes: Iterable[str]) -> ProjectorSettings:
    """`settings` with the workload's apps configured for the tenants of `prefixes`.

    The settings' own overrides and view agents stay, unless the workload names
    the same ``tenant/app``.
    """
    prefixes = list(prefixes)
    return settings.model_copy(
        update={
            "compaction_overrides": {
                **settings.compaction_overrides,
                **compaction_overrides(prefixes),
            },
            "view_agent_names": {**settings.view_agent_names, **view_agent_names(prefixes)},
        }
    )


def workload_env(prefixes: Iterable[str]) -> dict[str, str]:
    """The ``CTXSTREAM_*`` variables that configure a projector process the same way."""
    prefixes = list(prefixes)
    overrides = {
        entry: config.model_dump(exclude_none=True)
        for entry, config in compaction_overrides(prefixes).items()
    }
    return {
        "CTXSTREAM_COMPACTION_OVERRIDES": orjson.dumps(overrides).decode(),
        "CTXSTREAM_VIEW_AGENT_NAMES": orjson.dumps(view_agent_names(prefixes)).decode(),
    }
