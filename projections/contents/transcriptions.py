"""Turn live-audio transcriptions into text turns (reference §8.5). Pure: no I/O, no clock.

Live (bidi) sessions store what was said as events without content that carry
an input (user) or output (model) transcription. A run of consecutive
transcription chunks becomes one text turn, emitted at the last chunk.

Example: ``in "Hel"``, ``in "lo"``, ``out "Hi"`` -> ``user "Hello"``,
``model "Hi"`` (each a copy of the run's last event).

Each event's fate depends on itself, the running buffers and the next event
only, so an incremental projection can apply it with one event of lookahead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from schemas.event import Content, Event, Part, Transcription


def _text_of(transcription: Transcription | None) -> str:
    return transcription.text or "" if transcription is not None else ""


def merge_transcriptions(events: Sequence[Event]) -> list[Event]:
    """`events` with transcription runs replaced by text turns.

    For an event without content that has input transcription text, the text
    is appended to a buffer; when the next event also has input transcription
    text nothing is emitted yet, otherwise a copy of the event with a user
    content holding the whole buffer is emitted and the buffer is reset.
    Output transcriptions work the same with their own buffer and role
    ``model``; an event with both is treated as input. Every other event
    passes unchanged (an event with content keeps it, transcriptions ignored).
    """
    result: list[Event] = []
    pending_input = ""
    pending_output = ""
    for index, event in enumerate(events):
        following = events[index + 1] if index + 1 < len(events) else None
        if event.content is not None:
            result.append(event)
        elif text := _text_of(event.input_transcription):
            pending_input += text
            if following is not None and _text_of(following.input_transcription):
                continue
            result.append(_as_text_turn(event, "input_transcription", pending_input))
            pending_input = ""
        elif text := _text_of(event.output_transcription):
            pending_output += text
            if following is not None and _text_of(following.output_transcription):
                continue
            result.append(_as_text_turn(event, "output_transcription", pending_output))
            pending_output = ""
        else:
            result.append(event)
    return result


_ROLE_OF: Final = {"input_transcription": "user", "output_transcription": "model"}


def _as_text_turn(event: Event, consumed: str, text: str) -> Event:
    """A copy of `event` holding `text` as a content, the `consumed` field cleared."""
    content = Content(role=_ROLE_OF[consumed], parts=[Part(text=text)])
    return event.model_copy(update={"content": content, consumed: None})
