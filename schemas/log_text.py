r"""Untrusted text made safe for one log line or one error reason. Pure.

Anything that came from input (field names, request ids, session keys,
reasons quoting a record) may hold newlines, terminal escapes, bidi overrides
or megabytes. :func:`shown` renders such a value so that it stays on one line,
shows its control characters as escapes and is bounded in length.

Example: ``shown("x\nFORGED\x1b[2J")`` -> ``x\x0aFORGED\x1b[2J`` (one line).
"""

from __future__ import annotations

import unicodedata
from typing import Final

#: Unicode categories escaped: controls, format characters (bidi overrides,
#: zero-width), line and paragraph separators, surrogates, private use.
UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})
DEFAULT_LIMIT: Final = 200
_ELLIPSIS: Final = "..."


def _escaped(character: str) -> str:
    if unicodedata.category(character) not in UNSAFE_CATEGORIES:
        return character
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """`value` as one bounded, escaped line: ``str`` for text, ``repr`` for anything else.

    Never raises, whatever `value` is (a ``repr`` that fails or recurses is
    replaced by the value's type name). At most `limit` characters of the
    text are kept, then ``...``.

    Args:
        value: What to show.
        limit: Characters of the text kept; at least 1.
    """
    if isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except Exception:  # noqa: BLE001 - a hostile or deep value must not stop a log line
            text = f"<{type(value).__name__}>"
    cut = len(text) > limit
    text = text[: max(1, limit)]
    escaped = "".join(_escaped(character) for character in text)
    return escaped + _ELLIPSIS if cut else escaped
