"""A deterministic guess of the language a user writes in. Pure: no I/O.

The guess reads letters, not meaning: a non-Latin script names its language
directly (kana means Japanese, Hangul Korean, ...); Latin text is scored
against a few dozen very common words per language. It is a heuristic for the
summary's "Conversation language" line (reference §7.2), nothing more.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Final

#: Characters of user text read at most; a guess needs no more.
SAMPLE_CHARS: Final = 4000

#: Letters of a script needed before that script decides the language.
MIN_LETTERS: Final = 3

# Unicode character-name prefix -> language, for scripts that name one.
_SCRIPT_LANGUAGES: Final = (
    ("HIRAGANA", "Japanese"),
    ("KATAKANA", "Japanese"),
    ("HANGUL", "Korean"),
    ("CJK UNIFIED IDEOGRAPH", "Chinese"),
    ("CYRILLIC", "Russian"),
    ("GREEK", "Greek"),
    ("ARABIC", "Arabic"),
    ("HEBREW", "Hebrew"),
    ("DEVANAGARI", "Hindi"),
    ("THAI", "Thai"),
)

# Frequent short words; ties go to the earlier language.
_COMMON_WORDS: Final = (
    ("English", "the and is are you to of what how please my for with can it this that"),
    ("German", "der die das und ist nicht ich du mit für bitte wie was ein eine zu mein"),
    ("French", "le les et est je vous pour avec une des ne pas que mon il elle"),
    ("Spanish", "el los las y es que por para con una no mi cómo qué usted"),
    ("Italian", "il gli è che per con una non mi come cosa sono della"),
    ("Portuguese", "o os é que para com uma não meu como você está"),
    ("Dutch", "het een en is ik je niet met voor van wat hoe"),
)
_WORD_SETS: Final = tuple((name, frozenset(words.split())) for name, words in _COMMON_WORDS)
_WORD: Final = re.compile(r"[^\W\d_]+")


def _script_language(letter: str) -> str:
    name = unicodedata.name(letter, "")
    for prefix, language in _SCRIPT_LANGUAGES:
        if name.startswith(prefix):
            return language
    return "Latin" if name.startswith("LATIN") else ""


def _latin_language(sample: str) -> str | None:
    words = _WORD.findall(sample.lower())
    scores = [(sum(w in common for w in words), name) for name, common in _WORD_SETS]
    best = max(score for score, _ in scores)
    if best == 0:
        return None
    return next(name for score, name in scores if score == best)


def guess_language(texts: Iterable[str]) -> str | None:
    """The language `texts` are most likely written in, or None if unclear.

    Example: ``["Plan my day, please"]`` -> ``"English"``;
    ``["明日の予定を教えて"]`` -> ``"Japanese"`` (kana beats the shared Han
    characters); ``["42"]`` -> None.
    """
    sample = " ".join(texts)[:SAMPLE_CHARS]
    letters = Counter(_script_language(ch) for ch in sample if ch.isalpha())
    letters.pop("", None)
    if letters["Japanese"] and letters["Chinese"]:
        letters["Japanese"] += letters.pop("Chinese")
    if not letters:
        return None
    # most_common keeps first-seen order among ties, so the result is stable.
    script, count = letters.most_common(1)[0]
    if count < MIN_LETTERS:
        return None
    if script == "Latin":
        return _latin_language(sample)
    return script
