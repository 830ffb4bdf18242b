"""Session keys: four non-empty parts, bounded, with errors that say what is wrong."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.errors import InvalidSessionKeyError, TenantMismatchError
from schemas.keys import MAX_PART_LENGTH, check_tenant_owns_session, parse_session_key
from schemas.log_text import UNSAFE_CATEGORIES


def test_a_valid_key_splits_into_its_parts() -> None:
    parts = parse_session_key("acme/support/u42/s7")
    assert (parts.tenant, parts.app, parts.user, parts.session) == ("acme", "support", "u42", "s7")
    assert parts.key == "acme/support/u42/s7"


@pytest.mark.parametrize(
    "key",
    [
        "acme/support/u.42/s7",
        "acme/.../u/s",
        "ac me/app/ü/セッション",
        "acme/app/u@example.com/s:1",
    ],
)
def test_ordinary_text_is_accepted_in_a_part(key: str) -> None:
    assert parse_session_key(key).key == key


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("acme/support/u42", "has 3 '/'-separated parts, expected 4"),
        ("acme/support/u42/s7/extra", "has 5 '/'-separated parts, expected 4"),
        ("acme//u42/s7", "the app part is empty"),
        ("/support/u42/s7", "the tenant part is empty"),
        ("acme/support/u42/", "the session part is empty"),
        (f"acme/{'a' * (MAX_PART_LENGTH + 1)}/u/s", "the app part has 129 characters, at most 128"),
        ("acme/support/ u42/s7", "the user part ' u42' starts or ends with white space"),
        ("x" * 600, "600 characters, at most 515"),
        ("acme/../u/s", "the app part is '..', a path step"),
        ("./app/u/s", "the tenant part is '.', a path step"),
        ("acme/app/u/..", "the session part is '..', a path step"),
        ("acme/support/u\x0042/s7", r"the user part 'u\x0042' contains '\x00' (U+0000, Unicode "),
        ("acme/app/u\x7f/s", r"contains '\x7f' (U+007F, Unicode category Cc)"),
        ("acme/app/u\x85x/s", r"contains '\x85' (U+0085, Unicode category Cc)"),
        (
            "acme/app/u\x9bx/s",
            r"the user part 'u\x9bx' contains '\x9b' (U+009B, Unicode category Cc)",
        ),
        ("acme/app/u\u2028x/s", "(U+2028, Unicode category Zl)"),
        ("acme/app/u\u2029x/s", "(U+2029, Unicode category Zp)"),
        ("acme/app\u202e/u/s", r"the app part 'app\u202e' contains '\u202e' (U+202E, Unicode"),
        ("ac\u200bme/app/u/s", "(U+200B, Unicode category Cf)"),
        ("acme/app/u/s\ufeff", "(U+FEFF, Unicode category Cf)"),
        ("acme/app/u/s\ue000", "(U+E000, Unicode category Co)"),
        ("acme/app/u/s\ud800", "(U+D800, Unicode category Cs)"),
    ],
)
def test_an_invalid_key_is_rejected_with_its_reason(key: str, reason: str) -> None:
    with pytest.raises(InvalidSessionKeyError) as caught:
        parse_session_key(key)
    assert reason in str(caught.value)
    assert str(caught.value).isprintable()


_unsafe = st.characters(categories=sorted(UNSAFE_CATEGORIES))  # type: ignore[arg-type]  # hypothesis types categories as a Collection of its own Literal


# Inside a part: at its ends, some of these are white space, refused as such.
@given(st.sampled_from(["tenant", "app", "user", "session"]), _unsafe, st.integers(1, 3))
def test_any_unsafe_character_in_any_part_is_rejected(part: str, bad: str, at: int) -> None:
    parts = {"tenant": "acme", "app": "apps", "user": "user", "session": "sess"}
    word = parts[part]
    parts[part] = word[:at] + bad + word[at:]
    key = "/".join(parts.values())
    with pytest.raises(InvalidSessionKeyError) as caught:
        parse_session_key(key)
    message = str(caught.value)
    assert f"the {part} part" in message
    assert f"Unicode category {unicodedata.category(bad)}" in message
    assert message.isprintable()


def test_a_tenant_owns_only_its_own_sessions() -> None:
    check_tenant_owns_session("acme", "acme/app/u/s")
    with pytest.raises(TenantMismatchError, match=r"tenant 'evil' does not own session"):
        check_tenant_owns_session("evil", "acme/app/u/s")
    with pytest.raises(InvalidSessionKeyError):
        check_tenant_owns_session("acme", "acme/app/u")


def test_a_tenant_mismatch_names_the_owner() -> None:
    with pytest.raises(TenantMismatchError) as caught:
        check_tenant_owns_session("evil", "acme/app/u/s")
    assert str(caught.value) == (
        "tenant 'evil' does not own session 'acme/app/u/s' (its tenant part is 'acme')"
    )
    assert caught.value.owner == "acme"
