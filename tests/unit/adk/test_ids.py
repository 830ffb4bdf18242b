"""ADK ids as session key parts: injective, exact, and refused with the field's name.

Oracles: the key parser of :mod:`schemas.keys` (every escaped part is a valid part) and
Python's own UTF-8 codec, written apart from the escape (a decode by hand here).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstream.adk.ids import adk_ids, app_part, escape_id, session_key, unescape_id
from schemas.keys import parse_session_key

IDS = st.text(min_size=1, max_size=60)


def _decoded_by_hand(part: str) -> str:
    """An independent decode: bytes of each %XX run, UTF-8 with surrogates allowed."""
    out, i, run = [], 0, bytearray()
    while i < len(part):
        if part[i] == "%":
            run.append(int(part[i + 1 : i + 3], 16))
            i += 3
            continue
        if run:
            out.append(run.decode("utf-8", "surrogatepass"))
            run = bytearray()
        out.append(part[i])
        i += 1
    if run:
        out.append(run.decode("utf-8", "surrogatepass"))
    return "".join(out)


@given(IDS)
def test_escape_round_trips_and_makes_a_valid_part(value: str) -> None:
    part = escape_id(value, "user_id")
    assert unescape_id(part) == value
    assert _decoded_by_hand(part) == value
    parsed = parse_session_key(f"acme/app/{part}/s")
    assert parsed.user == part


#: Ids from the characters escapes are made of, so near-collisions are generated often.
CLOSE = st.text(alphabet="%2Ff/ .aé\u200b", min_size=1, max_size=8)


@given(CLOSE | IDS, CLOSE | IDS)
def test_distinct_ids_have_distinct_parts(first: str, second: str) -> None:
    if first != second:
        assert escape_id(first, "session_id") != escape_id(second, "session_id")


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("a/b", "a%2Fb"),
        ("100%", "100%25"),
        ("with spaces inside", "with spaces inside"),
        ("  edge ", "%20%20edge%20"),
        ("Zoë-東京", "Zoë-東京"),
        (".", "%2E"),
        ("..", "%2E%2E"),
        ("...", "..."),
        ("a\nb", "a%0Ab"),
        ("a\u200bb", "a%E2%80%8Bb"),
        ("%2F", "%252F"),
    ],
)
def test_escape_examples(value: str, part: str) -> None:
    assert escape_id(value, "user_id") == part


def test_ids_of_128_characters_are_kept() -> None:
    value = "x" * 128
    assert escape_id(value, "session_id") == value


@pytest.mark.parametrize(("field", "value"), [("user_id", "/" * 43), ("session_id", "é" * 129)])
def test_too_long_once_escaped_names_the_field_and_limit(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: .*at most 128"):
        escape_id(value, field)


def test_empty_and_non_string_ids_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^user_id: must not be empty"):
        escape_id("", "user_id")
    with pytest.raises(ValueError, match=r"^session_id: expected a string"):
        escape_id(7, "session_id")  # type: ignore[arg-type]  # what a caller may pass


def test_session_key_and_back() -> None:
    key = session_key("acme", "support", "u/1", " s 1")
    assert key == "acme/support/u%2F1/%20s 1"
    assert adk_ids(parse_session_key(key)) == ("support", "u/1", " s 1")


def test_an_app_name_that_cannot_be_a_part_is_refused_by_name() -> None:
    assert app_part("my_app-2") == "my_app-2"
    with pytest.raises(ValueError, match=r"^app_name: "):
        app_part("a/b")
