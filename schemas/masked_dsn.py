"""A PostgreSQL DSN with its password masked, for a banner or a log. Pure.

Example: ``masked_dsn("postgresql://postgres:s3cret@127.0.0.1:5432/db")`` ->
``postgresql://postgres:***@127.0.0.1:5432/db``.
"""

from __future__ import annotations

import re
from typing import Final

_PASSWORD: Final = re.compile(r"^(postgresql://[^:/@]*:)[^@]*@")


def masked_dsn(dsn: str) -> str:
    """`dsn` with the password between ``user:`` and ``@`` replaced by ``***``."""
    return _PASSWORD.sub(r"\1***@", dsn)
