"""A listing's cursor: it gives back the position it was made of, for its own listing only.

The oracle of a round trip is the position encoded; of a refusal, the argument it must name.
"""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstream.errors import InvalidArgumentError
from ctxstream.sessions.cursor import (
    MAX_CURSOR_CHARS,
    ListingPosition,
    ListingScope,
    decode_cursor,
    encode_cursor,
)

SCOPES = st.builds(
    ListingScope,
    tenant=st.text(min_size=1, max_size=20),
    app=st.none() | st.text(min_size=1, max_size=20),
).flatmap(
    lambda scope: (
        st.sampled_from([scope])
        if scope.app is None
        else st.builds(ListingScope, st.just(scope.tenant), st.just(scope.app), st.text(max_size=9))
    )
)
POSITIONS = st.builds(
    ListingPosition,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=60),
)


@given(SCOPES, POSITIONS)
def test_a_cursor_gives_back_its_position_exactly(
    scope: ListingScope, position: ListingPosition
) -> None:
    text = encode_cursor(scope, position)
    assert text.isascii()
    assert not set("=/+") & set(text)  # URL-safe, unpadded
    decoded = decode_cursor(text, scope)
    assert decoded == position
    assert decoded.last_activity.hex() == position.last_activity.hex()  # -0.0 stays -0.0


@pytest.mark.parametrize(
    "other",
    [
        ListingScope("globex", app="support"),
        ListingScope("acme"),
        ListingScope("acme", app="sales"),
        ListingScope("acme", app="support", user="u1"),
    ],
)
def test_a_cursor_of_another_listing_is_refused(other: ListingScope) -> None:
    text = encode_cursor(ListingScope("acme", app="support"), ListingPosition(1.5, "acme/x/y/z"))
    with pytest.raises(InvalidArgumentError, match=r"^cursor: it continues another listing"):
        decode_cursor(text, other)


def _raw(payload: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload)).decode()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not a cursor!",
        "%%%%",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _raw([1, 2]),
        _raw({"v": 2, "scope": ["acme", None, None], "at": "0x1p+0", "key": "k"}),
        _raw({"v": 1, "scope": ["acme", None, None], "at": 1.0, "key": "k"}),
        _raw({"v": 1, "scope": ["acme", None, None], "at": "inf", "key": "k"}),
        _raw({"v": 1, "scope": ["acme", None, None], "at": "0x1p+0", "key": 3}),
        _raw({"v": 1, "scope": ["acme", None, None], "at": "nonsense", "key": "k"}),
        "A" * (MAX_CURSOR_CHARS + 1),
    ],
)
def test_what_no_listing_gave_is_refused_naming_the_cursor(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^cursor: "):
        decode_cursor(text, ListingScope("acme"))


def test_a_user_without_an_app_is_refused_naming_user() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^user: "):
        ListingScope("acme", user="u1")
