"""The text a content contributes to long-term memory. Pure: no I/O, no clock.

Text parts only, in part order, joined by a newline; thoughts (``thought=True``),
calls, responses and media contribute nothing, as ADK's memory services skip
them. PostgreSQL's ``text`` refuses NUL, so a NUL becomes U+FFFD (the text is
for search; the event keeps its bytes in the event rows).

Example: parts ``[text "Ingrid likes sushi", thought "plan", call f()]`` ->
``"Ingrid likes sushi"``; only a thought -> ``""``.
"""

from __future__ import annotations

from typing import Final

from schemas.event import Content

#: What stands in for a NUL character in stored memory text.
NUL_REPLACEMENT: Final = "\ufffd"


def storable(text: str) -> str:
    """`text` with every NUL replaced by :data:`NUL_REPLACEMENT`."""
    return text.replace("\x00", NUL_REPLACEMENT)


def memory_text(content: Content | None) -> str:
    """The non-thought text parts of `content`, newline-joined; ``""`` when there are none."""
    if content is None or not content.parts:
        return ""
    texts = [part.text for part in content.parts if part.text and not part.thought]
    return storable("\n".join(texts))
