"""A DSN in a banner shows its user, host and database, never its password."""

from __future__ import annotations

from schemas.masked_dsn import masked_dsn


def test_the_password_is_masked_and_the_rest_kept() -> None:
    dsn = "postgresql://postgres:0a1b2c@127.0.0.1:19432/ctxstream"
    assert masked_dsn(dsn) == "postgresql://postgres:***@127.0.0.1:19432/ctxstream"


def test_a_dsn_without_a_password_is_unchanged() -> None:
    assert masked_dsn("postgresql://127.0.0.1:5432/db") == "postgresql://127.0.0.1:5432/db"
