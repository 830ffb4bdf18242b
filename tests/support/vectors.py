"""Load ADK's conformance vectors: the recorded ones inside the checkout by default.

``tests/conformance/vectors/`` holds the vectors ``tests/recorder`` recorded
from google-adk 2.13.0, so a clone needs nothing beside it.
``CTXSTREAM_CONFORMANCE_DIR`` points the conformance tests at another folder
of vector files in the same format instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RECORDED_DIR = Path(__file__).resolve().parents[1] / "conformance" / "vectors"
CONFORMANCE_DIR = Path(os.environ.get("CTXSTREAM_CONFORMANCE_DIR") or RECORDED_DIR)

Vector = dict[str, Any]


def load_vectors(kind: str, directory: Path | None = None) -> list[Vector]:
    """Every vector of one kind; fails (never skips) when the file is missing."""
    path = (directory or CONFORMANCE_DIR) / f"{kind}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def vector_id(vector: Vector) -> str:
    """The vector's id, for pytest's parametrize ids."""
    return str(vector["id"])
