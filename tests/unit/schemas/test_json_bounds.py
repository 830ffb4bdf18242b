"""`shown_path`: where a value sits in a record, as one bounded line."""

from __future__ import annotations

from schemas.json_bounds import shown_path


def test_the_record_itself_is_named() -> None:
    assert shown_path(()) == "<record>"


def test_a_path_of_six_keys_is_written_whole() -> None:
    assert shown_path(("a", "b", "c", "d", "e", 5)) == "a.b.c.d.e.5"


def test_a_path_of_seven_keys_keeps_its_first_four_and_last_two() -> None:
    assert shown_path(("a", "b", "c", "d", "x", "e", 6)) == "a.b.c.d....(7 levels)....e.6"
