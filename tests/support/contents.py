"""Contents assembly as the tests read it: genai JSON, or one short line per content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.contents.assembly import ContentsRequest, build_contents
from schemas.event import Event, content_to_json
from tests.support.events import Json


def contents(events: Sequence[Event], **request: Any) -> list[Json]:
    """build_contents as genai JSON, for agent "agent" unless told otherwise."""
    request.setdefault("agent_name", "agent")
    return [content_to_json(c) for c in build_contents(events, ContentsRequest(**request))]


def texts(events: Sequence[Event], **request: Any) -> list[str]:
    """Each content as ``role:text|text`` (calls as ``call(id)``, responses as ``resp(id)``)."""
    rendered: list[str] = []
    for content in contents(events, **request):
        pieces: list[str] = []
        for part in content["parts"]:
            if "functionCall" in part:
                pieces.append(f"call({part['functionCall'].get('id')})")
            elif "functionResponse" in part:
                fr = part["functionResponse"]
                pieces.append(f"resp({fr.get('id')}={fr.get('response')})")
            else:
                pieces.append(str(part.get("text")))
        rendered.append(f"{content['role']}:{'|'.join(pieces)}")
    return rendered
