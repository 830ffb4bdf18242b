"""The conversation history of a model prompt, bounded in characters. Pure: no I/O, no clock.

ADK's rendering (:func:`projections.compaction.render.render_transcript`) keeps
every text whole, so large events would make a prompt of megabytes, sent again
on every attempt (review M6). Here the window is rendered event by event, into
exactly the lines ``render_transcript`` writes, and cut when it does not fit:
a rolling seed (the previous summary) keeps its start, up to half of the room;
then a note of how many events were left out; then the newest events that fit
whole (if not even the newest fits, its end, marked with ``…``).

Example, room for 120 characters, a seed of 30 and events of 40 each:
``seed``, ``[transcript cut to fit the prompt: 3 of 5 events left out]``,
then the last two events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from projections.compaction.render import render_transcript
from schemas.event import Event
from summarizer_worker.summary_text import clip

#: The seed's author (reference §5.4), as `digest.seed_text` reads it.
SEED_AUTHOR: Final = "model"
#: The least room worth cutting into: a note and the end of one event.
MIN_TRANSCRIPT_CHARS: Final = 200
ELLIPSIS: Final = "…"


@dataclass(frozen=True, slots=True)
class PromptTranscript:
    """A window rendered for a prompt, cut to its bound if it had to be."""

    text: str
    """The history, at most the bound's characters."""

    left_out: int
    """Events (with something to render) left out, 0 when whole."""


def _cut_note(left_out: int, total: int) -> str:
    return f"[transcript cut to fit the prompt: {left_out} of {total} events left out]"


def prompt_transcript(window: Sequence[Event], max_chars: int) -> PromptTranscript:
    """The history of `window` for a prompt, at most `max_chars` characters.

    Whole, exactly as ``render_transcript`` renders it, when it fits.

    Raises:
        ValueError: `max_chars` is below :data:`MIN_TRANSCRIPT_CHARS`.
    """
    if max_chars < MIN_TRANSCRIPT_CHARS:
        raise ValueError(f"max_chars={max_chars!r}: must be at least {MIN_TRANSCRIPT_CHARS}")
    blocks = [(event, text) for event in window if (text := render_transcript([event]))]
    whole = "\n".join(text for _, text in blocks)
    if len(whole) <= max_chars:
        return PromptTranscript(whole, 0)
    total = len(blocks)
    head: list[str] = []
    body = [text for _, text in blocks]
    # Room left, counting one newline after every line but the last.
    room = max_chars + 1 - (len(_cut_note(total, total)) + 1)
    if window and blocks and blocks[0][0] is window[0] and window[0].author == SEED_AUTHOR:
        seed = clip(body.pop(0), max_chars // 2)
        head.append(seed)
        room -= len(seed) + 1
    kept: list[str] = []
    for text in reversed(body):
        if len(text) + 1 > room:
            break
        kept.append(text)
        room -= len(text) + 1
    if not kept and body and room > len(ELLIPSIS) + 1:
        # Not even the newest event fits: its end is the newest part of the window.
        newest = body[-1]
        kept.append(ELLIPSIS + newest[len(newest) - (room - 1 - len(ELLIPSIS)) :])
    left_out = total - len(head) - len(kept)
    lines = [*head, _cut_note(left_out, total), *reversed(kept)]
    return PromptTranscript("\n".join(lines), left_out)
