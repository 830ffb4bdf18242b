"""The extractive summary's layout: budgets, cuts, and reading it back."""

from __future__ import annotations

from summarizer_worker.summary_text import (
    BUDGETS,
    MAX_COUNT,
    MAX_COUNT_DIGITS,
    Digest,
    Section,
    clip,
    fit_section,
    parse_summary,
    render_digest,
)


def test_the_shares_add_up_to_the_whole_budget() -> None:
    assert abs(sum(b.share for b in BUDGETS) - 1.0) < 1e-9


def test_clip_marks_the_cut() -> None:
    assert clip("abcdef", 6) == "abcdef"
    assert clip("abcdef", 4) == "abc…"


def test_a_section_that_fits_is_whole() -> None:
    section = Section(("a", "b"), omitted=2)
    assert fit_section("T", section, 100, 100) == ["T:", "- a", "- (2 more omitted)", "- b"]


def test_a_section_that_does_not_fit_keeps_the_first_and_the_newest() -> None:
    items = tuple(ch * 8 for ch in "abcde")  # "- " + 8 = 10 characters a line
    assert len("\n".join(["T:", *(f"- {item}" for item in items)])) == 57
    lines = fit_section("T", Section(items), 100, 54)
    assert lines == ["T:", "- aaaaaaaa", "- (2 more omitted)", "- dddddddd", "- eeeeeeee"]
    assert len("\n".join(lines)) == 54


def test_a_section_without_room_for_an_item_is_left_out() -> None:
    assert fit_section("Title", Section(("x" * 50,)), 100, 20) == []


def test_render_then_parse_gives_the_digest_back() -> None:
    digest = Digest(
        language="French",
        earlier=Section(("Avant: un voyage.",)),
        requests=Section(("Réserve un hôtel", "Et un train?"), omitted=4),
        decisions=Section(("agent: Hôtel réservé.",)),
        tools=Section(("book_hotel (1 call): {'city': 'Lyon'} -> ok",)),
        open_questions=Section(("asked: Et un train?",)),
    )
    assert parse_summary(render_digest(digest, 4000)) == digest


def test_text_outside_the_sections_becomes_one_earlier_item() -> None:
    digest = parse_summary("**Summary**\n\n* the user wants X\n* agreed on Y")
    assert digest.earlier == Section(("**Summary** * the user wants X * agreed on Y",))
    assert digest.language is None


def test_a_count_of_thousands_of_digits_is_read_as_an_item_not_a_number() -> None:
    # H4: int() of a 5,000-digit run raises (Python's integer-string limit).
    huge = "9" * 5000
    digest = parse_summary(f"User requests:\n- ask\n- ({huge} more omitted)")
    assert digest.requests == Section(("ask", f"({huge} more omitted)"), omitted=0)


def test_counts_are_capped_where_they_add_up_so_the_layout_reads_them_back() -> None:
    digest = parse_summary(
        f"User requests:\n- ask\n- ({MAX_COUNT} more omitted)\n- (5 more omitted)\n- next"
    )
    assert digest.requests.omitted == MAX_COUNT
    text = render_digest(digest, 4000)
    assert f"- ({MAX_COUNT} more omitted)" in text
    assert parse_summary(text).requests == digest.requests
    assert len(str(MAX_COUNT)) == MAX_COUNT_DIGITS
