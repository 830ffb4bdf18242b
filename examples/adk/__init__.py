"""The ADK worked example: ``agent.py`` holds ``root_agent`` (ADK's loader imports this package)."""

from . import agent  # noqa: TID252 - ADK imports this folder as a package of its own name

__all__ = ["agent"]
