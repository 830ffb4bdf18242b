"""ADK's app, user and session ids as parts of a session key, and back. Pure.

ADK accepts any user and session id; a session key part (:mod:`schemas.keys`) may not hold
``/``, controls, format characters or white space at its ends, nor be ``.`` or ``..``.
:func:`escape_id` writes ``%`` and each such character as ``%XX`` of its UTF-8 bytes and
keeps every other character (non-ASCII letters included); as ``%`` itself is always
escaped, :func:`unescape_id` is exact and two ids never share a part. An escaped part
over 128 characters is refused, naming the field. App names are ADK identifiers
(``^[a-zA-Z][a-zA-Z0-9_-]*$``) and are only checked.

Example::

    escape_id("a/b 100%", "user_id") -> "a%2Fb 100%25"
    escape_id(" x", "session_id") -> "%20x";  escape_id("..", "user_id") -> "%2E%2E"
    session_key("acme", "support", "u/1", "s1") -> "acme/support/u%2F1/s1"
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from schemas.errors import InvalidSessionKeyError
from schemas.keys import MAX_PART_LENGTH, SessionKey, SessionKeyParts, parse_session_key
from schemas.log_text import UNSAFE_CATEGORIES

_ALWAYS: Final = frozenset("%/")
_PATH_STEPS: Final = frozenset({".", ".."})
_ESCAPE: Final = re.compile(r"(?:%[0-9A-F]{2})+")


def _escaped(text: str) -> str:
    # surrogatepass: a lone surrogate (category Cs) has no UTF-8 form otherwise.
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8", "surrogatepass"))


def escape_id(value: str, field: str) -> str:
    """`value` as a session key part, escaped injectively (the module docstring's rules).

    Raises:
        ValueError: `value` is not a string, is empty, or escapes to more than 128
            characters; the message starts with `field`.
    """
    if not isinstance(value, str):
        raise ValueError(f"{field}: expected a string, got {type(value).__name__}")  # noqa: TRY004
    if not value:
        raise ValueError(f"{field}: must not be empty")
    if value in _PATH_STEPS:
        return _escaped(value)
    stripped = value.strip()
    start = len(value) - len(value.lstrip())
    end = start + len(stripped)
    pieces = [_escaped(value[:start])]
    for character in value[start:end]:
        unsafe = character in _ALWAYS or unicodedata.category(character) in UNSAFE_CATEGORIES
        pieces.append(_escaped(character) if unsafe else character)
    pieces.append(_escaped(value[end:]))
    part = "".join(pieces)
    if len(part) > MAX_PART_LENGTH:
        raise ValueError(
            f"{field}: {value[:40]!r}... is {len(part)} characters once escaped for a session "
            f"key, at most {MAX_PART_LENGTH} (escaped: '%', '/', controls, format characters, "
            "white space at the ends, as %XX of their UTF-8 bytes)"
        )
    return part


def unescape_id(part: str) -> str:
    """The id :func:`escape_id` escaped to `part` (exact: each ``%XX`` run is UTF-8 bytes)."""
    return _ESCAPE.sub(
        lambda run: bytes.fromhex(run.group().replace("%", "")).decode("utf-8", "surrogatepass"),
        part,
    )


def app_part(app_name: str) -> str:
    """`app_name` as the key's app part (never escaped: ADK's app names are identifiers).

    Raises:
        ValueError: The app name cannot be a key part; the message starts with ``app_name``.
    """
    try:
        parse_session_key(f"t/{app_name}/u/s")
    except (InvalidSessionKeyError, TypeError) as exc:
        raise ValueError(f"app_name: {app_name!r} cannot name an app: {exc}") from None
    return app_name


def session_key(tenant: str, app_name: str, user_id: str, session_id: str) -> SessionKey:
    """The session key of ADK's (app, user, session) in `tenant`.

    Raises:
        ValueError: An id is refused (:func:`escape_id`, :func:`app_part`), naming it.
    """
    user = escape_id(user_id, "user_id")
    session = escape_id(session_id, "session_id")
    return SessionKeyParts(
        parse_session_key(f"{tenant}/a/u/s").tenant, app_part(app_name), user, session
    ).key


def adk_ids(key: SessionKeyParts) -> tuple[str, str, str]:
    """ADK's (app_name, user_id, session_id) of a parsed session key."""
    return key.app, unescape_id(key.user), unescape_id(key.session)
