"""The memory benchmark's workload: memories of many users and the questions asked of them.

Pure: no I/O, no clock, no randomness (choices are hashes of the seed and position,
as :mod:`ctxstream.bench.workload` makes them). Memories come in sessions of
:data:`SESSION_EVENTS` events (a user message, then the model's answer, about a
fact: who likes what, who lives where, bookings, appointments, numbers) with a
summary of each half session, so about one memory in eleven is a summary. Sessions
go to users with a skew: user ``k`` of a scope gets sessions in proportion to
``1 / (k + 1)``, so a few heavy users hold thousands of memories and most hold a few
dozen. A question names one memory's fact as ADK's ``preload_memory`` would send
the user's next message (a whole sentence), and one in :data:`TYPO_EVERY` drops a
letter of the name or thing it asks about.

Example: ``memories(3)[0].text`` is a user sentence such as "Please remember that
Ingrid prefers ramen when we eat out."
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from projections.memory.memory_record import Memory

TENANTS: Final = 4
APPS_PER_TENANT: Final = 2
USERS_PER_APP: Final = 25
SESSION_EVENTS: Final = 20
TYPO_EVERY: Final = 10
FIRST_TIMESTAMP: Final = 1_700_000_000.0

NAMES: Final = (
    "Ingrid", "Brandt", "Amelia", "Kofi", "Yuki", "Mateo", "Priya", "Lars", "Fatima", "Oskar",
    "Chiara", "Dmitri", "Aisha", "Bruno", "Saoirse", "Tariq", "Helga", "Rafael", "Mei", "Jonas",
    "Zanele", "Henrik", "Lucia", "Emeka", "Sigrid", "Arjun", "Beatriz", "Kwame", "Noor", "Felix",
)  # fmt: skip
FOODS: Final = (
    "ramen", "sushi", "paella", "falafel", "risotto", "tacos", "goulash", "pho", "dumplings",
    "lasagne", "curry", "ceviche", "pierogi", "moussaka", "bibimbap", "couscous",
)  # fmt: skip
CITIES: Final = (
    "Lisbon", "Oslo", "Nairobi", "Kyoto", "Valparaiso", "Tallinn", "Porto", "Accra", "Seville",
    "Krakow", "Hanoi", "Montreal", "Bergen", "Cusco", "Ghent", "Tbilisi",
)  # fmt: skip
PLACES: Final = (
    "the dentist", "the garage", "the bank", "the vet", "the tax office", "the gym",
    "the library", "the pharmacy", "the school", "the town hall",
)  # fmt: skip
DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: Syllables of the made-up words (street names, products, code names) that give the
#: vocabulary a realistic size: 24 * 24 * 24 = 13,824 possible words.
SYLLABLES: Final = (
    "ka", "lo", "mi", "ren", "tas", "vo", "bri", "den", "fal", "gor", "hu", "jin",
    "mar", "nel", "pol", "quo", "ris", "sel", "tor", "ul", "ven", "wex", "yar", "zum",
)  # fmt: skip
THINGS: Final = (
    "passport", "laptop charger", "umbrella", "bike lock", "spare keys", "headphones",
    "insurance papers", "camera", "tent", "guitar",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Question:
    """What a user asks, in whose scope, and what an answer states.

    Attributes:
        answer_words: The fact's values (the name and what it likes, where it lives, ...):
            a memory whose text holds them all answers the question, whichever session
            it comes from.
    """

    tenant: str
    app: str
    user_id: str
    text: str
    answer_words: tuple[str, ...]


class _Fact(NamedTuple):
    said: str
    answered: str
    question: str
    words: tuple[str, ...]


def _choice(seed: int, position: int, salt: str, options: Sequence[str]) -> str:
    digest = hashlib.blake2b(f"{seed}:{position}:{salt}".encode(), digest_size=8).digest()
    return options[int.from_bytes(digest, "big") % len(options)]


def _fact(seed: int, position: int, owner: str) -> _Fact:
    """A fact of `owner` (a user's scope): the user's sentence, the answer, the question.

    What a person likes and where they live is the same in every session of one owner,
    as a user's facts are; appointments and loans vary.
    """
    name = _choice(seed, position, "name", NAMES)
    topic = int(hashlib.blake2b(f"{seed}:{position}".encode(), digest_size=2).hexdigest(), 16) % 4
    if topic == 0:
        food = _choice(seed, 0, f"food:{owner}:{name}", FOODS)
        return _Fact(
            f"Please remember that {name} prefers {food} when we eat out together.",
            f"Noted: {name} likes {food} best, so I will suggest places that serve it.",
            f"What food does {name} like?",
            (name, food),
        )
    if topic == 1:
        city = _choice(seed, 0, f"city:{owner}:{name}", CITIES)
        return _Fact(
            f"{name} moved to {city} last spring and is looking for a flat near"
            f" {_made_up(seed, position)} Street.",
            f"I will keep in mind that {name} now lives in {city}.",
            f"Where does {name} live these days?",
            (name, city),
        )
    if topic == 2:
        place = _choice(seed, position, "place", PLACES)
        day = _choice(seed, position, "day", DAYS)
        return _Fact(
            f"I have an appointment at {place} with {name} on {day} at ten in the morning.",
            f"Your appointment at {place} with {name} is on {day} at 10:00.",
            f"When am I seeing {name} at {place}?",
            (name, place, day),
        )
    thing = _choice(seed, position, "thing", THINGS)
    return _Fact(
        f"I lent my {thing} to {name} before the trip to {_made_up(seed, position)}"
        f" and still need it back.",
        f"Reminder saved: {name} has your {thing}.",
        f"Who did I lend my {thing} to?",
        (thing, name),
    )


def _made_up(seed: int, position: int) -> str:
    """A capitalised made-up place name of three syllables, such as ``Kalomi``."""
    word = "".join(_choice(seed, position, f"syllable{n}", SYLLABLES) for n in range(3))
    return word.capitalize()


def _scopes() -> list[tuple[str, str, str]]:
    return [
        (f"tenant{t}", f"app{a}", f"user{u}")
        for t in range(TENANTS)
        for a in range(APPS_PER_TENANT)
        for u in range(USERS_PER_APP)
    ]


def _session_owners(sessions: int) -> list[tuple[str, str, str]]:
    """The scope of each session: user k of a scope weighs ``1 / (k + 1)``, spread evenly."""
    scopes = _scopes()
    weights = [1 / (int(user.removeprefix("user")) + 1) for _, _, user in scopes]
    total = sum(weights)
    owners: list[tuple[str, str, str]] = []
    credit = [0.0] * len(scopes)
    for _ in range(sessions):  # largest remainder, one session at a time: deterministic
        for index, weight in enumerate(weights):
            credit[index] += weight / total
        best = max(range(len(scopes)), key=credit.__getitem__)
        credit[best] -= 1.0
        owners.append(scopes[best])
    return owners


def memories(count: int, *, seed: int = 0) -> Iterator[Memory]:
    """The first `count` memories of the workload, sessions one after another."""
    sessions = -(-count // (SESSION_EVENTS + 2))
    produced = 0
    for number, (tenant, app, user) in enumerate(_session_owners(sessions)):
        key = f"{tenant}/{app}/{user}/session{number}"
        start = FIRST_TIMESTAMP + number * 1000.0
        for memory in _session(seed, number, key, start):
            if produced == count:
                return
            produced += 1
            yield memory


def _session(seed: int, number: int, key: str, start: float) -> Iterator[Memory]:
    tenant, app, user, _ = key.split("/")
    owner = f"{tenant}/{app}/{user}"
    offset = number * (SESSION_EVENTS + 2)
    half = SESSION_EVENTS // 2
    for index in range(SESSION_EVENTS):
        position = number * SESSION_EVENTS + index
        said, answered, _question, _words = _fact(seed, position // 2, owner)
        author, text = ("user", said) if index % 2 == 0 else ("model", answered)
        yield Memory(
            tenant, app, user, key, f"{key}#{index}", number % 12, offset + index, author,
            author, start + index, "event", None, text,
        )  # fmt: skip
        if index % half == half - 1:
            first = index - half + 1
            facts = [
                _fact(seed, (number * SESSION_EVENTS + i) // 2, owner).said
                for i in range(first, index, 2)
            ]
            yield Memory(
                tenant, app, user, key, f"{key}#summary{index}", number % 12,
                offset + SESSION_EVENTS + index // half, "user", "model", start + index + 0.5,
                "summary", (start + first, start + index), "Summary: " + " ".join(facts),
            )  # fmt: skip


def questions(count: int, memory_count: int, *, seed: int = 0) -> list[Question]:
    """`count` questions about facts of the first `memory_count` memories, spread over them."""
    picked: list[Question] = []
    events = [m for m in memories(memory_count, seed=seed) if m.kind == "event"]
    for number in range(count):
        digest = hashlib.blake2b(f"{seed}:q{number}".encode(), digest_size=8).digest()
        memory = events[int.from_bytes(digest, "big") % len(events)]
        index = int(memory.memory_id.rsplit("#", 1)[1])
        session = int(memory.session_key.rsplit("session", 1)[1])
        owner = memory.session_key.rsplit("/", 1)[0]
        fact = _fact(seed, (session * SESSION_EVENTS + index) // 2, owner)
        text = fact.question
        if number % TYPO_EVERY == TYPO_EVERY - 1:
            asked_about = next(word for word in fact.words if word in text)
            text = _drop_a_letter(text, asked_about)
        picked.append(Question(memory.tenant, memory.app, memory.user_id, text, fact.words))
    return picked


def _drop_a_letter(question: str, asked_about: str) -> str:
    """`question` with the third letter of `asked_about` (a name or a thing) removed."""
    return question.replace(asked_about, asked_about[:2] + asked_about[3:], 1)


def scope_count() -> int:
    """How many (tenant, app, user) scopes the workload spreads its sessions over."""
    return TENANTS * APPS_PER_TENANT * USERS_PER_APP
