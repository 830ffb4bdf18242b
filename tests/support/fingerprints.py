"""The context fingerprint as its definition states it, written apart from the code under test.

SHA-256 of the SHA-256 digests of each content's canonical JSON (keys sorted,
compact separators, non-ASCII kept), concatenated in order. Built here from
``json`` and ``hashlib`` alone, so a test compares the project's fingerprint
with the definition, not with itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any


def fingerprint_of(contents: Sequence[Any]) -> str:
    """The fingerprint of contents given as JSON values (camelCase, None fields left out)."""
    digests = b"".join(
        hashlib.sha256(
            json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).digest()
        for item in contents
    )
    return hashlib.sha256(digests).hexdigest()


def fingerprint_of_text(canonical: str) -> str:
    """The fingerprint of contents written out as one canonical JSON array."""
    return fingerprint_of(json.loads(canonical))
