"""Record what ADK 2.13.0 writes for one event when nothing is left out (every field, nulls too).

Runs in the recorder's throwaway virtualenv (README.md here); it imports ADK,
never the project. Usage, from the repository's root::

    /tmp/adk-venv/bin/python tests/recorder/full_event_dump.py \
        > tests/fixtures/adk-event-full-dump.json

The event carries a text, a call, a response, inline and file data, usage,
both transcriptions and a compaction, so every model the append door walks
(:mod:`schemas.unknown_fields`) is dumped with all its fields: ``by_alias``
(camelCase, as the wire carries it) and ``by_name`` (snake_case). The door
must accept both: no field ADK has may be refused as unknown.
"""

from __future__ import annotations

import json
import sys

from google.adk.events.event import Event
from google.adk.events.event_actions import (
    EventActions,
    EventCompaction,
)
from google.genai import types


def full_event() -> Event:
    """One event that sets a value in every model the door walks."""
    summary = types.Content(role="user", parts=[types.Part(text="summary")])
    return Event(
        id="e1",
        invocation_id="inv1",
        author="agent",
        timestamp=1.0,
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="hi"),
                types.Part(function_call=types.FunctionCall(id="c1", name="f", args={"x": 1})),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="f", response={"ok": True}
                    )
                ),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=b"ab")),
                types.Part(file_data=types.FileData(file_uri="gs://b/f", mime_type="text/plain")),
            ],
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=3),
        input_transcription=types.Transcription(text="in"),
        output_transcription=types.Transcription(text="out"),
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=0.0, end_timestamp=1.0, compacted_content=summary
            )
        ),
    )


def main() -> None:
    """Print the two dumps as one JSON object, keys sorted."""
    event = full_event()
    dumps = {
        "adk_version": "2.13.0",
        "by_alias": event.model_dump(mode="json", by_alias=True),
        "by_name": event.model_dump(mode="json"),
    }
    sys.stdout.write(json.dumps(dumps, sort_keys=True, indent=1) + "\n")


if __name__ == "__main__":
    main()
