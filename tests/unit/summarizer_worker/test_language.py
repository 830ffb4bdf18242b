"""The deterministic guess of the user's language."""

from __future__ import annotations

import pytest

from summarizer_worker.language import guess_language


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["Plan my day, please"], "English"),
        (["Wie ist das Wetter? Ich will es wissen"], "German"),
        (["Je voudrais une chambre pour deux nuits avec vue"], "French"),
        (["¿Cómo está el tiempo para mañana?"], "Spanish"),
        (["明日の予定を教えてください"], "Japanese"),
        (["明天的天气怎么样"], "Chinese"),
        (["내일 날씨 어때요"], "Korean"),
        (["Какая завтра погода"], "Russian"),
        (["42 + 17"], None),
        (["ok"], None),
        (["Zxqv bnmt"], None),
        ([], None),
    ],
)
def test_guess(texts: list[str], expected: str | None) -> None:
    assert guess_language(texts) == expected


def test_the_majority_of_letters_decides() -> None:
    assert guess_language(["Hola", "What is the plan for the team today and tomorrow"]) == (
        "English"
    )
