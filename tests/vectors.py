"""Load ADK's conformance vectors from the shared folder beside the checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CONFORMANCE_DIR = Path(
    os.environ.get(
        "CTXSTREAM_CONFORMANCE_DIR",
        Path(__file__).resolve().parents[2] / "shared" / "conformance",
    )
)

Vector = dict[str, Any]


def load_vectors(kind: str) -> list[Vector]:
    """Every vector of one kind; fails (never skips) when the file is missing."""
    path = CONFORMANCE_DIR / f"{kind}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def vector_id(vector: Vector) -> str:
    """The vector's id, for pytest's parametrize ids."""
    return str(vector["id"])
