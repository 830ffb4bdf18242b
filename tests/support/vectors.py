"""ADK's conformance vectors: load them (the recorded ones inside the checkout by default)
and write events and contents in their shape.

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
Json = dict[str, Any]


def load_vectors(kind: str, directory: Path | None = None) -> list[Vector]:
    """Every vector of one kind; fails (never skips) when the file is missing."""
    path = (directory or CONFORMANCE_DIR) / f"{kind}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def vector_id(vector: Vector) -> str:
    """The vector's id, for pytest's parametrize ids."""
    return str(vector["id"])


def vector_event(
    event_id: str,
    invocation_id: str,
    author: str,
    timestamp: float,
    content: Json | None = None,
    **fields: Any,
) -> Json:
    """An event as the vectors serialize it (camelCase, container defaults present)."""
    event: Json = {
        "actions": {
            "artifactDelta": {},
            "requestedAuthConfigs": {},
            "requestedToolConfirmations": {},
            "stateDelta": {},
        },
        "author": author,
        "id": event_id,
        "invocationId": invocation_id,
        "nodeInfo": {"path": ""},
        "timestamp": timestamp,
        **fields,
    }
    if content is not None:
        event["content"] = content
    return event


def text_content(role: str, text: str) -> Json:
    """A one-part text content."""
    return {"parts": [{"text": text}], "role": role}
