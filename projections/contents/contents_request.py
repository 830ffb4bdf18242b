"""What a request's contents are built for: agent, branch, scope and options. Pure data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ContentsRequest:
    """Whom the contents are built for, and how."""

    agent_name: str = ""
    """The agent the request is for; ``""``: replies are not quoted, summaries are by ``model``."""
    current_branch: str | None = None
    """The invocation branch (dot-separated), None when there is none."""
    include_contents: Literal["default", "none"] = "default"
    """``default``: the whole history (§8); ``none``: the current turn only (§9)."""
    preserve_function_call_ids: bool = False
    """Keep ``adk-`` call ids (models that pair calls and results by id)."""
    include_thoughts_from_other_agents: bool = False
    """Quote other agents' thoughts (run-config flag; never used in ``none`` mode)."""
    isolation_scope: str | None = None
    """The agent's isolation scope; only events with exactly this scope are seen."""
