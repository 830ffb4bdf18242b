"""The memory benchmark's workload: deterministic, skewed, summaries over their halves."""

from __future__ import annotations

from collections import Counter

from ctxstream.bench.memory_workload import (
    NAMES,
    SESSION_EVENTS,
    THINGS,
    TYPO_EVERY,
    memories,
    questions,
    scope_count,
)


def test_the_same_arguments_give_the_same_memories_and_a_prefix_is_a_prefix() -> None:
    assert list(memories(500)) == list(memories(500))
    assert list(memories(200)) == list(memories(500))[:200]
    assert list(memories(100, seed=1)) != list(memories(100))


def test_a_session_is_its_events_and_a_summary_of_each_half() -> None:
    session = [m for m in memories(1_000) if m.session_key == "tenant0/app0/user0/session0"]
    events = [m for m in session if m.kind == "event"]
    summaries = [m for m in session if m.kind == "summary"]

    assert len(events) == SESSION_EVENTS
    assert len(summaries) == 2
    half = SESSION_EVENTS // 2
    for number, summary in enumerate(summaries):
        covered = events[number * half : (number + 1) * half]
        assert summary.covered == (covered[0].timestamp, covered[-1].timestamp)
        # The summary states what the user said in its half.
        for event in covered:
            if event.author == "user":
                assert event.text in summary.text
    assert len({m.memory_id for m in session}) == len(session)
    assert len({m.offset for m in session}) == len(session)


def test_users_are_skewed_over_every_scope() -> None:
    counts = Counter((m.tenant, m.app, m.user_id) for m in memories(50_000))

    assert len(counts) == scope_count() == 200
    heavy = counts[("tenant1", "app0", "user0")]
    light = counts[("tenant1", "app0", "user24")]
    assert heavy > 10 * light > 0


def test_every_question_has_an_answer_in_its_own_scope() -> None:
    stored = list(memories(5_000))
    asked = questions(200, 5_000)

    for question in asked:
        scope = [
            m.text
            for m in stored
            if (m.tenant, m.app, m.user_id) == (question.tenant, question.app, question.user_id)
        ]
        assert any(all(word in text for word in question.answer_words) for text in scope), question
    assert questions(200, 5_000) == asked


def _deletions(name: str) -> set[str]:
    return {name[:n] + name[n + 1 :] for n in range(len(name))}


def test_every_tenth_question_misses_one_letter_of_a_name_or_thing() -> None:
    asked = [q.text.rstrip("?").split() for q in questions(60, 5_000)]
    words_asked_about = {word for phrase in (*NAMES, *THINGS) for word in phrase.split()}

    for number, words in enumerate(asked):
        shortened = [
            w
            for w in words
            if w not in words_asked_about
            and any(w in _deletions(whole) for whole in words_asked_about)
        ]
        if number % TYPO_EVERY == TYPO_EVERY - 1:
            assert len(shortened) == 1, words
        else:
            assert shortened == [], words
