"""What a rebuild or a switch refuses, each error saying what was wrong and what to do."""

from __future__ import annotations

from schemas.errors import CtxstreamError


class ReplayError(CtxstreamError):
    """A rebuild cannot start as asked: its schema already holds offsets, or is a stable one."""


class SwitchError(CtxstreamError):
    """The stable views cannot be switched: a target behind, locked views, a wrong schema."""
