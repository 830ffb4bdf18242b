"""`MemoryStore.search` against the real PostgreSQL: ADK's sentence queries, typos, scope.

Each test writes its memories with `add_memories` into a fresh schema (migration 0002
applied as the runner applies it) and searches them. The expected hits are written by
hand from the memories' texts: which memory answers which question, which typos must
match (a letter missing near a name's end: ``Ingrd``, ``Brant`` 0.67, ``Peper`` 0.625,
at least pg_trgm's default word_similarity threshold 0.6) and which need not and, at that
threshold, do not (a transposition, ``Ingird`` 0.43; a letter missing mid-name,
``Ingid`` 0.5, ``Brndt`` 0.44: the trigrams around the change are lost).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime

import psycopg
import pytest
from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from ctxstream.bench.memory_schema import create_memory_schema, drop_schema
from ctxstream.errors import InvalidArgumentError
from ctxstream.memory import MemoryStore
from projections.memory.memory_record import Memory, memory_of
from schemas.keys import SessionKey
from streams.sink.memory_rows import add_memories
from tests.support.events import event, logged_event, text

pytestmark = pytest.mark.integration

#: The facts of user u1 (acme/support), one memory each, by id.
FACTS = {
    "park": "I parked the car on level 3 of the airport garage, spot B12.",
    "sushi": "Ingrid is my sister; she loves sushi but cannot stand olives.",
    "brandt": "Set up a meeting with Mr Brandt from accounting for Friday at noon.",
    "allergy": "I am allergic to penicillin, the doctor said to always mention it.",
    "flight": "My flight to Lisbon leaves on 14 March from terminal 2.",
    "dog": "Our dog Pepper needs her vaccination booster next month.",
    "wifi": "The office wifi password changed to 'Blue-Harbor-42'.",
    "budget": "The marketing budget for Q3 was approved at 120,000 euros.",
    "birthday": "Mum's birthday is on 2 September; she would like a gardening book.",
    "laptop": "My laptop is a ThinkPad X1 bought in 2022, warranty until 2025.",
}
#: What ADK's preload_memory sends: the whole user message. Each must find its fact among
#: the first three: lexical search cannot tell "like" from "love", so "What food does my
#: sister like?" ranks the birthday fact ("she would like a gardening book") level with it.
QUESTIONS = [
    ("Where did I park my car yesterday?", "park"),
    ("What food does my sister like?", "sushi"),
    ("When is the meeting with accounting?", "brandt"),
    ("Which medicine am I allergic to?", "allergy"),
    ("What time is my flight to Lisbon and from which terminal?", "flight"),
    ("Does the dog need any vaccinations soon?", "dog"),
    ("Can you remind me of the wifi password for the office?", "wifi"),
    ("How much was the Q3 marketing budget?", "budget"),
    ("What should I get Mum for her birthday?", "birthday"),
    ("Is my laptop still under warranty?", "laptop"),
]


def memory(memory_id: str, text: str, **changes: object) -> Memory:
    """A memory of user u1 in acme/support, session s1, at timestamp 100 + its offset."""
    offset = int(changes.pop("offset", 0))  # type: ignore[call-overload]
    base = Memory(
        tenant="acme",
        app="support",
        user_id="u1",
        session_key="acme/support/u1/s1",
        memory_id=memory_id,
        partition=0,
        offset=offset,
        author="user",
        role="user",
        timestamp=100.0 + offset,
        kind="event",
        covered=None,
        text=text,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def summary(memory_id: str, text: str, offset: int, covered: tuple[float, float]) -> Memory:
    """A summary memory of session s1, written at `offset`, standing in for `covered`."""
    return memory(memory_id, text, offset=offset, kind="summary", covered=covered, author="model")


def facts() -> list[Memory]:
    return [memory(key, text, offset=n) for n, (key, text) in enumerate(FACTS.items())]


@pytest.fixture
async def connection(postgres_dsn: str) -> AsyncIterator[AsyncConnection[TupleRow]]:
    async with await AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
async def schema(connection: AsyncConnection[TupleRow]) -> AsyncIterator[str]:
    name = f"test_memory_{uuid.uuid4().hex[:12]}"
    await create_memory_schema(connection, name)
    try:
        yield name
    finally:
        await drop_schema(connection, name)


async def write(connection: AsyncConnection[TupleRow], schema: str, memories: list[Memory]) -> int:
    async with connection.transaction():
        return await add_memories(connection, schema, memories)


async def ids(store: MemoryStore, query: str, user: str = "u1", **scope: str) -> list[str]:
    found = await store.search(
        scope.get("tenant", "acme"), scope.get("app", "support"), user, query
    )
    return [entry.id for entry in found]


@pytest.mark.parametrize(("question", "fact"), QUESTIONS)
async def test_a_natural_question_finds_its_fact(
    connection: AsyncConnection[TupleRow], schema: str, question: str, fact: str
) -> None:
    await write(connection, schema, facts())

    found = await ids(MemoryStore(connection, schema=schema), question)

    assert fact in found[:3], found


async def test_a_websearch_query_would_find_nothing_for_such_a_question(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    # The oracle for why the search ORs: websearch_to_tsquery ANDs the question's words.
    await write(connection, schema, facts())
    cursor = await connection.execute(
        psycopg.sql.SQL(
            "SELECT count(*) FROM {} WHERE text_vector @@ "
            "websearch_to_tsquery('english', 'Where did I park my car yesterday?')"
        ).format(psycopg.sql.Identifier(schema, "memories"))
    )
    assert await cursor.fetchone() == (0,)


@pytest.mark.parametrize(
    ("query", "fact"),
    [
        ("What does Ingrd like?", "sushi"),  # one letter deleted: 0.67
        ("When do I see Brant?", "brandt"),  # one letter deleted: 0.67
        ("Ingrd", "sushi"),
        ("Brant", "brandt"),
        ("Is Peper vaccinated?", "dog"),  # "Pepper" with a letter deleted
    ],
)
async def test_a_name_with_a_letter_missing_still_finds_its_memory(
    connection: AsyncConnection[TupleRow], schema: str, query: str, fact: str
) -> None:
    await write(connection, schema, facts())

    assert fact in await ids(MemoryStore(connection, schema=schema), query)


@pytest.mark.parametrize(
    "typo",
    ["Ingird", "Ingid", "Brndt"],
    ids=["transposed: 0.43", "middle letter missing: 0.5", "middle letter missing: 0.44"],
)
async def test_a_transposed_or_mid_word_typo_need_not_match_at_the_default_threshold(
    connection: AsyncConnection[TupleRow], schema: str, typo: str
) -> None:
    # Too few trigrams survive the change (word_similarity below 0.6): not a hit.
    await write(connection, schema, facts())

    assert await ids(MemoryStore(connection, schema=schema), typo) == []


async def test_a_typo_of_a_name_only_another_user_knows_finds_nothing(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    # The vocabulary is shared, the memories are not: "Brant" comes near u2's "Brandt",
    # and u1 has no memory holding it.
    theirs = memory("theirs", FACTS["brandt"], user_id="u2", session_key="acme/support/u2/s1")
    await write(connection, schema, [memory("mine", FACTS["park"]), theirs])

    assert await ids(MemoryStore(connection, schema=schema), "When do I meet Brant?") == []


@pytest.mark.parametrize(
    "scope",
    [
        {"user_id": "u2", "session_key": "acme/support/u2/s1"},
        {"app": "sales", "session_key": "acme/sales/u1/s1"},
        {"tenant": "globex", "session_key": "globex/support/u1/s1"},
    ],
    ids=["another user", "another app", "another tenant"],
)
async def test_an_identical_fact_of_another_scope_is_never_found(
    connection: AsyncConnection[TupleRow], schema: str, scope: dict[str, str]
) -> None:
    mine = memory("mine", FACTS["park"])
    theirs = memory("theirs", FACTS["park"], **scope)
    await write(connection, schema, [mine, theirs])
    store = MemoryStore(connection, schema=schema)

    assert await ids(store, "Where did I park my car?") == ["mine"]
    other = await store.search(theirs.tenant, theirs.app, theirs.user_id, "Where is my car?")
    assert [entry.id for entry in other] == ["theirs"]


async def test_a_summary_hit_stands_in_for_the_events_it_covers(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    covered = [
        memory("e1", "Where should I park at the airport?", offset=0),  # timestamp 100
        memory("e2", "Park on level 3 of the garage.", offset=1),  # 101
    ]
    after = memory("e3", "I parked on level 4 after all.", offset=3)  # 103: not covered
    stands_in = summary(
        "sum", "The user asked where to park; level 3 of the garage.", 2, (100, 101)
    )
    elsewhere = memory(
        "other",
        "Park near the east exit next time.",
        offset=4,
        session_key="acme/support/u1/s2",
        timestamp=100.5,
    )  # inside the summary's range, but of another session: kept
    await write(connection, schema, [*covered, after, stands_in, elsewhere])

    found = await ids(MemoryStore(connection, schema=schema), "Where do I park?")

    assert sorted(found) == ["e3", "other", "sum"]


async def test_a_summary_ranks_with_the_best_score_of_what_it_stands_in_for(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    # The covered answer holds two query words ("zanele", "like"), its summary one: the
    # summary takes the answer's place in the ranking, above a newer one-word hit.
    answer = memory("e1", "Noted: Zanele likes falafel best.", offset=0)
    stands_in = summary("sum", "Summary: Zanele prefers falafel.", 2, (100.0, 101.0))
    newer = memory("e9", "Brandt likes risotto.", offset=9)
    await write(connection, schema, [answer, stands_in, newer])

    found = await MemoryStore(connection, schema=schema).search(
        "acme", "support", "u1", "What food does Zanele like?"
    )

    assert [entry.id for entry in found] == ["sum", "e9"]
    assert found[0].score > found[1].score


async def test_a_covered_event_is_returned_when_its_summary_is_no_hit(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    event = memory("e1", "The lighthouse tour starts at nine.", offset=0)
    small_talk = summary("sum", "Small talk about the weather.", 2, (100.0, 101.0))
    await write(connection, schema, [event, small_talk])

    assert await ids(MemoryStore(connection, schema=schema), "When is the lighthouse tour?") == [
        "e1"
    ]


async def test_a_summary_inside_a_wider_summary_hit_is_dropped(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    # Rolling summaries: each new one covers the previous range and more (masking hides
    # the narrower one); of two equal ranges the later (higher offset) stands.
    first = summary("sum1", "Travel plans: Lisbon.", 5, (100.0, 104.0))
    wider = summary("sum2", "Travel plans: Lisbon, then Porto.", 9, (100.0, 108.0))
    again = summary("sum3", "Travel: Lisbon and Porto by train.", 12, (100.0, 108.0))
    await write(connection, schema, [first, wider, again])

    assert await ids(MemoryStore(connection, schema=schema), "Lisbon travel plans") == ["sum3"]


async def test_the_limit_is_honoured(connection: AsyncConnection[TupleRow], schema: str) -> None:
    many = [memory(f"m{n}", f"Note {n} about the garden hose.", offset=n) for n in range(15)]
    await write(connection, schema, many)
    store = MemoryStore(connection, schema=schema)

    assert len(await store.search("acme", "support", "u1", "garden hose?")) == 10
    newest = await store.search("acme", "support", "u1", "garden hose?", limit=3)
    # Equal scores: the newest first.
    assert [entry.id for entry in newest] == ["m14", "m13", "m12"]


@pytest.mark.parametrize("limit", [0, -1, 1001])
async def test_a_limit_out_of_range_is_refused(
    connection: AsyncConnection[TupleRow], schema: str, limit: int
) -> None:
    with pytest.raises(InvalidArgumentError, match="limit"):
        await MemoryStore(connection, schema=schema).search("acme", "support", "u1", "x", limit)


@pytest.mark.parametrize(
    "query", ["", "   ", "the of and is it", "?!...,;", "Where was I?", "\x00"]
)
async def test_a_query_without_lexemes_finds_nothing_without_error(
    connection: AsyncConnection[TupleRow], schema: str, query: str
) -> None:
    await write(connection, schema, facts())

    assert await ids(MemoryStore(connection, schema=schema), query) == []


@pytest.mark.parametrize(
    "query",
    [
        "garage' OR 1=1 --",
        "garage'); DROP TABLE memories; --",
        "garage \\ back\\slash \\' quote\\",
        "garage & | ! : * ( ) <-> :* 'a':A",
        "garage\x00'\x00|",
        '"garage" "unclosed',
    ],
)
async def test_quotes_backslashes_operators_and_nul_are_only_text(
    connection: AsyncConnection[TupleRow], schema: str, query: str
) -> None:
    await write(connection, schema, facts())
    store = MemoryStore(connection, schema=schema)

    assert await ids(store, query) == ["park"]
    # The table is intact, and another user still sees nothing.
    assert await ids(store, "garage", user="u2") == []
    cursor = await connection.execute(
        psycopg.sql.SQL("SELECT count(*) FROM {}").format(
            psycopg.sql.Identifier(schema, "memories")
        )
    )
    assert await cursor.fetchone() == (len(FACTS),)


async def test_a_memory_text_holding_tsquery_syntax_is_found_by_its_words(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    await write(connection, schema, [memory("odd", "O'Brien's path is C:\\temp\\x & y | z!")])

    assert await ids(MemoryStore(connection, schema=schema), "What is O'Brien's path?") == ["odd"]


async def test_an_entry_has_adks_shape(connection: AsyncConnection[TupleRow], schema: str) -> None:
    await write(connection, schema, [memory("park", FACTS["park"], timestamp=1_700_000_000.25)])

    (entry,) = await MemoryStore(connection, schema=schema).search(
        "acme", "support", "u1", "Where is my car?"
    )

    assert entry.id == "park"
    assert entry.author == "user"
    assert entry.timestamp == datetime.fromtimestamp(1_700_000_000.25).isoformat()  # noqa: DTZ006
    assert entry.content.role == "user"
    assert [part.text for part in entry.content.parts or []] == [FACTS["park"]]
    assert (entry.kind, entry.session_key) == ("event", "acme/support/u1/s1")
    assert entry.score > 0


async def test_writing_an_event_again_is_a_no_op(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    assert await write(connection, schema, facts()) == len(FACTS)
    # A redelivery, and a duplicate within one batch, change nothing.
    twice = [*facts(), memory("park", "another text under the same id")]
    assert await write(connection, schema, twice) == 0

    found = await MemoryStore(connection, schema=schema).search(
        "acme", "support", "u1", "Where did I park?"
    )
    assert [(entry.id, entry.text) for entry in found] == [("park", FACTS["park"])]


async def test_the_language_is_the_documents_and_the_querys(
    connection: AsyncConnection[TupleRow], schema: str, postgres_dsn: str
) -> None:
    german = memory("auto", "Ich habe das Auto im Parkhaus auf Ebene 3 geparkt.")
    async with connection.transaction():
        await add_memories(connection, schema, [german], language="german")
    await write(connection, schema, facts())

    async with MemoryStore.connect(postgres_dsn, schema=schema, language="german") as store:
        # German stemming: "geparkt" in the text and the question, "Autos" -> "auto".
        assert await ids(store, "Wo habe ich meine Autos geparkt?") == ["auto"]
    # An English search reads English memories only.
    english = await ids(MemoryStore(connection, schema=schema), "Where did I park my car?")
    assert "auto" not in english


async def test_an_unknown_language_is_refused_by_name(postgres_dsn: str, schema: str) -> None:
    with pytest.raises(InvalidArgumentError, match="klingon"):
        async with MemoryStore.connect(postgres_dsn, schema=schema, language="klingon"):
            pass


async def test_two_writes_in_one_transaction_both_land_with_their_lexemes(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    first, second = facts()[:5], facts()[5:]
    async with connection.transaction():
        assert await add_memories(connection, schema, first) == len(first)
        assert await add_memories(connection, schema, second) == len(second)

    memories = psycopg.sql.Identifier(schema, "memories")
    lexemes = psycopg.sql.Identifier(schema, "memory_lexemes")
    cursor = await connection.execute(
        psycopg.sql.SQL("SELECT memory_id FROM {} ORDER BY memory_id").format(memories)
    )
    assert [row[0] for row in await cursor.fetchall()] == sorted(FACTS)
    cursor = await connection.execute(psycopg.sql.SQL("SELECT lexeme FROM {}").format(lexemes))
    vocabulary = [row[0] for row in await cursor.fetchall()]
    # Hand-picked lexemes of the facts (English stems), each once.
    assert {"park", "garag", "ingrid", "sushi", "brandt", "penicillin", "lisbon"} <= set(vocabulary)
    assert len(vocabulary) == len(set(vocabulary))
    assert "the" not in vocabulary  # a stop word is no lexeme


async def test_an_event_with_nul_characters_is_stored_and_found(
    connection: AsyncConnection[TupleRow], schema: str
) -> None:
    record = logged_event(
        SessionKey("acme/support/u1/s1"), event("e1", "user", 100.0, [text("Kofi\x00Mensah")]), 3
    )
    stored = memory_of(record, partition=0)
    assert stored is not None
    await write(connection, schema, [stored])

    (entry,) = await MemoryStore(connection, schema=schema).search(
        "acme", "support", "u1", "Who is Kofi?"
    )
    assert entry.text == "Kofi\ufffdMensah"
