"""`shown`: untrusted values as one bounded, escaped line."""

from __future__ import annotations

from schemas.log_text import shown


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_text_of_exactly_the_limit_is_not_cut() -> None:
    assert shown("abc", 3) == "abc"
    assert shown("abcd", 3) == "abc..."


def test_a_limit_below_one_keeps_one_character() -> None:
    assert shown("abc", 1) == "a..."
    assert shown("abc", 0) == "a..."


def test_a_value_whose_repr_fails_is_shown_by_its_type_name() -> None:
    assert shown(_Unprintable()) == "<_Unprintable>"


def test_control_characters_are_escaped_by_their_width() -> None:
    assert shown("\x1b\u202e\U000e0001") == "\\x1b\\u202e\\U000e0001"
