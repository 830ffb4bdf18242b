"""Session keys: four non-empty parts, bounded, with errors that say what is wrong."""

from __future__ import annotations

import pytest

from schemas.errors import InvalidSessionKeyError
from schemas.keys import MAX_PART_LENGTH, parse_session_key


def test_a_valid_key_splits_into_its_parts() -> None:
    parts = parse_session_key("acme/support/u42/s7")
    assert (parts.tenant, parts.app, parts.user, parts.session) == ("acme", "support", "u42", "s7")
    assert parts.key == "acme/support/u42/s7"


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("acme/support/u42", "has 3 '/'-separated parts, expected 4"),
        ("acme/support/u42/s7/extra", "has 5 '/'-separated parts, expected 4"),
        ("acme//u42/s7", "the app part is empty"),
        ("/support/u42/s7", "the tenant part is empty"),
        ("acme/support/u42/", "the session part is empty"),
        (f"acme/{'a' * (MAX_PART_LENGTH + 1)}/u/s", "the app part has 129 characters, at most 128"),
        ("acme/support/ u42/s7", "the user part starts or ends with white space"),
        ("acme/support/u\x0042/s7", "the user part contains a control character"),
        ("x" * 600, "600 characters, at most 515"),
    ],
)
def test_an_invalid_key_is_rejected_with_its_reason(key: str, reason: str) -> None:
    with pytest.raises(InvalidSessionKeyError) as caught:
        parse_session_key(key)
    assert reason in str(caught.value)
