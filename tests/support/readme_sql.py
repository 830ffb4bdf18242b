"""The README's SQL examples as a reader sees them: each query and the output printed under it.

The SQL section (``## SQL read model and memory``, up to the next ``## `` heading) pairs every
fenced ``sql`` block with the ``text`` block that follows it: what ``psql`` prints for it. The
test runs the queries verbatim, in order, in one ``psql`` session, and compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

SQL_HEADING: Final = "## SQL read model and memory"
_FENCE: Final = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class SqlExample:
    """One query block of the README and the output it prints under it."""

    query: str
    output: str


def sql_section(readme: str) -> str:
    """The text of the SQL section of `readme`: from its heading to the next ``## ``."""
    start = readme.index(SQL_HEADING)
    end = readme.find("\n## ", start + len(SQL_HEADING))
    return readme[start : end if end != -1 else len(readme)]


def sql_examples(readme: str) -> list[SqlExample]:
    """Every ``sql`` block of the section with the ``text`` block right after it, in order.

    Raises:
        ValueError: An ``sql`` block is not followed by a ``text`` block (its printed output).
    """
    fences = [(m.group(1), m.group(2)) for m in _FENCE.finditer(sql_section(readme))]
    examples = []
    for number, (language, body) in enumerate(fences):
        if language != "sql":
            continue
        following = fences[number + 1] if number + 1 < len(fences) else None
        if following is None or following[0] != "text":
            raise ValueError(f"the README's query {body.strip()!r} has no printed output after it")
        examples.append(SqlExample(body, following[1]))
    return examples


def printed_lines(text: str) -> list[str]:
    """`text`'s lines without trailing blanks and without empty lines.

    psql pads its header cells with spaces that editors strip from the README, and ends each
    result with an empty line; neither is part of what the reader compares.
    """
    return [line.rstrip() for line in text.splitlines() if line.strip()]
