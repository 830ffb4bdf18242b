"""Every scenario of the five ADK kinds, by kind (the recorder computes their ``expected``)."""

from __future__ import annotations

from tests.recorder.event_json import VectorScenario
from tests.recorder.scenarios_compaction import SLIDING_WINDOW, TOKEN_THRESHOLD
from tests.recorder.scenarios_contents import CONTENTS
from tests.recorder.scenarios_render_state import SESSION_STATE, SUMMARIZER_RENDER

SCENARIOS: dict[str, list[VectorScenario]] = {
    "contents": CONTENTS,
    "sliding_window": SLIDING_WINDOW,
    "token_threshold": TOKEN_THRESHOLD,
    "summarizer_render": SUMMARIZER_RENDER,
    "session_state": SESSION_STATE,
}
