"""The extractive summary's text: its bounded layout and its parser. Pure: no I/O.

A summary is a language line and up to five sections of one-line items::

    Conversation language: English
    User requests:
    - Plan my day
    - (3 more omitted)
    - Move the dentist to Friday
    Tools used:
    - get_calendar (2 calls): {'day': 'mon'} -> ['standup 9:00']

Every item is a single line, so the parser reads back exactly the items the
layout wrote, whatever the conversation's text contained; a rolling summary
(reference §5.4) is parsed and folded into the next one instead of being
quoted whole, which keeps a summary of a summary within the same bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

LANGUAGE_PREFIX: Final = "Conversation language: "
UNKNOWN_LANGUAGE: Final = "unknown"
#: Longest language name written; a seed from elsewhere might carry anything.
LANGUAGE_CHARS: Final = 40

EARLIER: Final = "Earlier summary"
REQUESTS: Final = "User requests"
DECISIONS: Final = "Decisions / answers"
TOOLS: Final = "Tools used"
OPEN_QUESTIONS: Final = "Open questions"

#: The text of a non-empty window with nothing to extract.
NOTHING_SAID: Final = "No messages or tool calls in this part of the conversation."

#: Shortest clipped item worth writing, ``"- "`` included.
MIN_ITEM_CHARS: Final = 24

#: Most digits of a count written or read back (omitted items, tool calls).
#: A seed can hold any text: a count of 5,000 digits would make ``int()``
#: raise (Python's integer-string limit), so longer runs are not counts.
MAX_COUNT_DIGITS: Final = 9
MAX_COUNT: Final = 10**MAX_COUNT_DIGITS - 1
#: A count as the layout writes it: ASCII digits, at most `MAX_COUNT_DIGITS`.
COUNT_PATTERN: Final = rf"[0-9]{{1,{MAX_COUNT_DIGITS}}}"

_OMITTED: Final = re.compile(rf"^- \(({COUNT_PATTERN}) more omitted\)$")


@dataclass(frozen=True, slots=True)
class Section:
    """The items of one section, oldest first."""

    items: tuple[str, ...] = ()
    """One line each, without the leading ``"- "``."""

    omitted: int = 0
    """Items dropped for space by this or an earlier summary."""


@dataclass(frozen=True, slots=True)
class Digest:
    """What a summary says, section by section, before it is laid out."""

    language: str | None = None
    earlier: Section = Section()
    requests: Section = Section()
    decisions: Section = Section()
    tools: Section = Section()
    open_questions: Section = Section()

    def sections(self) -> tuple[tuple[str, Section], ...]:
        """The sections with their titles, in output order."""
        return (
            (EARLIER, self.earlier),
            (REQUESTS, self.requests),
            (DECISIONS, self.decisions),
            (TOOLS, self.tools),
            (OPEN_QUESTIONS, self.open_questions),
        )


@dataclass(frozen=True, slots=True)
class SectionBudget:
    """How much room one section gets."""

    title: str
    share: float
    """Fraction of the characters left after the language line."""

    item_chars: int
    """Longest item kept whole; longer ones are clipped with an ellipsis."""


#: The documented budget: shares add up to 1. Room a section does not use goes
#: to the sections after it that have more to say, in this order.
BUDGETS: Final = (
    SectionBudget(EARLIER, 0.10, 600),
    SectionBudget(REQUESTS, 0.30, 300),
    SectionBudget(DECISIONS, 0.25, 300),
    SectionBudget(TOOLS, 0.20, 200),
    SectionBudget(OPEN_QUESTIONS, 0.15, 200),
)
_TITLES: Final = frozenset(budget.title for budget in BUDGETS)


def one_line(text: str) -> str:
    """`text` with every run of whitespace, newlines included, as one space."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the cut marked with ``…``."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


def capped_count(count: int) -> int:
    """`count`, at most `MAX_COUNT`: what the layout writes and reads back stays a count."""
    return min(count, MAX_COUNT)


def _omitted_line(count: int) -> str:
    return f"- ({capped_count(count)} more omitted)"


def _cost(lines: list[str]) -> int:
    return sum(len(line) for line in lines) + max(len(lines) - 1, 0)


def fit_section(title: str, section: Section, item_chars: int, budget: int) -> list[str]:
    """The section's lines, at most `budget` characters joined with newlines.

    All items if they fit. Otherwise the first item (usually the session's
    original ask, clipped to half the room), a count of what was dropped,
    then as many of the newest items as fit, the oldest of them clipped to
    the room left. Empty when not even the title and a short item fit.

    Example, title ``T``, items a..e written as 10-character lines (57
    characters in all) and a budget of 54: ``T:``, ``- aaaaaaaa``,
    ``- (2 more omitted)``, ``- dddddddd``, ``- eeeeeeee``.
    """
    items = [f"- {clip(one_line(item), item_chars)}" for item in section.items]
    if not items:
        return []
    head = f"{title}:"
    whole = [head, items[0]]
    if section.omitted:
        whole.append(_omitted_line(section.omitted))
    whole.extend(items[1:])
    if _cost(whole) <= budget:
        return whole
    # Reserve room for the widest count this section could need, then add the
    # newest items while they fit.
    most_dropped = section.omitted + len(items) - 1
    note_chars = len(_omitted_line(most_dropped)) + 1 if most_dropped else 0
    room = budget - len(head) - 1 - note_chars
    if room < MIN_ITEM_CHARS:
        return []
    first = _clip_item(items[0], room // 2 if len(items) > 1 else room)
    room -= len(first)
    tail: list[str] = []
    for item in reversed(items[1:]):
        if len(item) + 1 <= room:
            tail.append(item)
            room -= len(item) + 1
            continue
        if room - 1 >= MIN_ITEM_CHARS:
            tail.append(_clip_item(item, room - 1))
        break
    dropped = most_dropped - len(tail)
    note = [_omitted_line(dropped)] if dropped else []
    return [head, first, *note, *reversed(tail)]


def _clip_item(line: str, limit: int) -> str:
    return line if len(line) <= limit else "- " + clip(line[2:], limit - 2)


def _allot(needs: list[int], shares: list[float], room: int) -> list[int]:
    given = [min(need, int(room * share)) for need, share in zip(needs, shares, strict=True)]
    spare = room - sum(given)
    for i, need in enumerate(needs):
        extra = min(need - given[i], spare)
        given[i] += extra
        spare -= extra
    return given


def render_digest(digest: Digest, max_chars: int) -> str:
    """The summary text of `digest`, never longer than `max_chars`.

    The language line comes first; each non-empty section then gets its share
    of the remaining characters (`BUDGETS`), topped up with what earlier
    sections left unused, and is cut by `fit_section`.
    """
    language = clip(one_line(digest.language or UNKNOWN_LANGUAGE), LANGUAGE_CHARS)
    head = f"{LANGUAGE_PREFIX}{language}"
    sections = dict(digest.sections())
    present = [b for b in BUDGETS if sections[b.title].items]
    if not present:
        return clip(f"{head}\n{NOTHING_SAID}", max_chars)
    # One newline before each section.
    room = max_chars - len(head) - len(present)
    wholes = [fit_section(b.title, sections[b.title], b.item_chars, room) for b in present]
    budgets = _allot([_cost(lines) for lines in wholes], [b.share for b in present], room)
    blocks = [head]
    for b, budget in zip(present, budgets, strict=True):
        lines = fit_section(b.title, sections[b.title], b.item_chars, budget)
        if lines:
            blocks.append("\n".join(lines))
    # The budgets already hold the bound; the cut only guards it.
    return "\n".join(blocks)[:max_chars]


def parse_summary(text: str) -> Digest:
    """The digest a summary's text says, for folding it into the next summary.

    Reads back what `render_digest` writes. Text that is not in a known
    section (a summary from another backend, say) becomes one
    ``Earlier summary`` item, so nothing is lost but it stays bounded.
    """
    language: str | None = None
    found: dict[str, list[str]] = {title: [] for title in _TITLES}
    omitted: dict[str, int] = dict.fromkeys(_TITLES, 0)
    loose: list[str] = []
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(LANGUAGE_PREFIX) and language is None and current is None:
            guessed = line.removeprefix(LANGUAGE_PREFIX).strip()
            language = guessed if guessed and guessed != UNKNOWN_LANGUAGE else None
        elif line.endswith(":") and line[:-1] in _TITLES:
            current = line[:-1]
        elif current is not None and (count := _OMITTED.match(line)):
            omitted[current] = capped_count(omitted[current] + int(count.group(1)))
        elif current is not None and line.startswith("- "):
            found[current].append(line[2:])
        elif line and line != NOTHING_SAID:
            loose.append(line)
    if loose:
        found[EARLIER].append(" ".join(loose))

    def section(title: str) -> Section:
        return Section(tuple(found[title]), omitted[title])

    return Digest(
        language=language,
        earlier=section(EARLIER),
        requests=section(REQUESTS),
        decisions=section(DECISIONS),
        tools=section(TOOLS),
        open_questions=section(OPEN_QUESTIONS),
    )
