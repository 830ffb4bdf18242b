"""The README's tour as a reader sees it: its code blocks, in order, exactly as printed.

The tour test runs these blocks verbatim; this module only finds them. A
block is a fenced code block of the section ``## A five-minute tour`` (up to
the next ``## `` heading) whose fence names ``sh``, ``bash`` or ``python``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

TOUR_HEADING: Final = "## A five-minute tour"
_FENCE: Final = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_LANGUAGES: Final[dict[str, Literal["sh", "python"]]] = {
    "sh": "sh",
    "bash": "sh",
    "python": "python",
}
#: A shell variable a line assigns (``NAME=...`` or ``export NAME=...``) at its start.
_ASSIGNMENT: Final = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", re.MULTILINE)


@dataclass(frozen=True)
class TourBlock:
    """One code block of the tour: its language, its text, and whether it runs until Ctrl-C."""

    language: Literal["sh", "python"]
    code: str

    @property
    def follows(self) -> bool:
        """Whether the block runs until the reader stops it (the tour says "Ctrl-C" for it)."""
        return "Ctrl-C" in self.code

    def assigned_variables(self) -> list[str]:
        """The shell variables the block sets, so the next block in the same terminal has them."""
        return sorted(set(_ASSIGNMENT.findall(self.code))) if self.language == "sh" else []


def tour_section(readme: str) -> str:
    """The text of the tour section of `readme`: from its heading to the next ``## ``."""
    start = readme.index(TOUR_HEADING)
    end = readme.find("\n## ", start + len(TOUR_HEADING))
    return readme[start : end if end != -1 else len(readme)]


def tour_blocks(readme: str) -> list[TourBlock]:
    """The tour's shell and Python blocks in the order the README prints them."""
    blocks = []
    for fence in _FENCE.finditer(tour_section(readme)):
        language = _LANGUAGES.get(fence.group(1))
        if language is None:
            raise ValueError(f"the tour has a code block of unknown language {fence.group(1)!r}")
        blocks.append(TourBlock(language, fence.group(2)))
    return blocks
