"""The dead-letter builder: what it keeps, what it cuts, and that it says so."""

from __future__ import annotations

import orjson

from schemas.dead_letter import DeadLetter, build_dead_letter

# A letter with reason "rrrr", stage "s", topic "t", no key and a six-digit
# original_size encodes (with an empty value) to 167 bytes, so the builder's
# room is 900,000 - 167 - 17 - 4 = 899,812 (a multiple of 4) and the longest
# value kept whole is 899,812 // 4 * 3 = 674,859 bytes.
_FITS = 674_859


def _letter(**overrides: object) -> DeadLetter:
    arguments: dict[str, object] = {
        "reason": "rrrr",
        "stage": "s",
        "source_topic": "t",
        "source_partition": 0,
        "source_offset": 0,
        "key": None,
        "value": b"v",
    }
    arguments.update(overrides)
    return build_dead_letter(**arguments)  # type: ignore[arg-type]


def test_a_small_record_is_kept_whole() -> None:
    letter = _letter(key=b"k", source_partition=3, source_offset=0)
    assert letter.original_value == b"v"
    assert letter.original_key == b"k"
    assert letter.source_offset == 0
    assert letter.source_partition == 3
    assert letter.original_size == 1
    assert letter.truncated is False


def test_a_negative_offset_becomes_zero() -> None:
    assert _letter(source_offset=-5).source_offset == 0


def test_a_key_of_the_limit_is_kept_and_a_longer_one_is_cut() -> None:
    assert _letter(key=b"k" * 1024).original_key == b"k" * 1024
    assert _letter(key=b"k" * 1024).truncated is False
    cut = _letter(key=b"k" * 1025)
    assert cut.original_key == b"k" * 1024
    assert cut.truncated is True
    assert cut.original_value == b"v"


def test_a_cut_reason_alone_marks_the_letter_truncated() -> None:
    letter = _letter(reason="x" * 2001)
    assert letter.reason == "x" * 2000 + "..."
    assert letter.original_value == b"v"
    assert letter.truncated is True


def test_an_escaped_reason_marks_the_letter_truncated() -> None:
    letter = _letter(reason="bad\nline")
    assert letter.reason == "bad\\x0aline"
    assert letter.truncated is True


def test_an_empty_reason_and_stage_are_named() -> None:
    letter = _letter(reason="", stage="")
    assert letter.reason == "no reason given"
    assert letter.stage == "unknown"


def test_the_stage_is_cut_to_64_characters() -> None:
    assert _letter(stage="s" * 64).stage == "s" * 64
    assert _letter(stage="s" * 65).stage == "s" * 64 + "..."


def test_the_source_topic_is_cut_to_255_characters() -> None:
    assert _letter(source_topic="t" * 255).source_topic == "t" * 255
    assert _letter(source_topic="t" * 256).source_topic == "t" * 255 + "..."


def test_a_value_of_exactly_the_room_is_kept_whole() -> None:
    value = b"\x07" * _FITS
    letter = _letter(value=value)
    assert letter.original_value == value
    assert letter.original_size == 674_859
    assert letter.truncated is False
    encoded = orjson.dumps(letter.model_dump(mode="json", exclude_none=True))
    # 167 bytes of the empty letter plus 899,812 characters of base64.
    assert len(encoded) == 899_979


def test_a_value_one_byte_past_the_room_is_cut_to_the_room() -> None:
    value = b"\x07" * (_FITS + 1)
    letter = _letter(value=value)
    assert letter.original_value == b"\x07" * 674_859
    assert letter.original_size == 674_860
    assert letter.truncated is True
    assert not hasattr(letter, "XXoriginal_valueXX")
