-- Long-term memory: one row per event text or summary the sink makes a memory.
-- Applied by the migration runner with search_path = <target schema>, public; pg_trgm (0001).
-- ctxstream/memory/README.md has the search these indexes serve; streams/sink/memory_rows.py
-- writes both tables.

CREATE TABLE memories (
    -- A surrogate key: what the search's summary dedupe joins on.
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text NOT NULL,
    app text NOT NULL,
    user_id text NOT NULL,
    session_key text NOT NULL,
    -- ADK's MemoryEntry.id: the event id (delete_memory names it).
    memory_id text NOT NULL,
    -- The `events` record the memory comes from.
    partition integer NOT NULL CHECK (partition >= 0),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    author text NOT NULL,
    -- The content's role ("user", "model"), as ADK returns it in MemoryEntry.content.
    role text,
    -- ADK's float seconds.
    event_timestamp double precision NOT NULL,
    kind text NOT NULL CHECK (kind IN ('event', 'summary')),
    -- A summary's [start, end] range: the raw events of its session it stands in for.
    covered_start double precision,
    covered_end double precision,
    text text NOT NULL,
    language regconfig NOT NULL DEFAULT 'english',
    text_vector tsvector GENERATED ALWAYS AS (to_tsvector(language, text)) STORED,
    CONSTRAINT memories_summary_has_range CHECK (
        (kind = 'summary') = (covered_start IS NOT NULL AND covered_end IS NOT NULL)
        AND (covered_start IS NULL) = (covered_end IS NULL)
    ),
    -- Re-ingesting an event (a redelivery, a replay, a duplicate append) is a no-op.
    CONSTRAINT memories_once_per_session UNIQUE (session_key, memory_id)
);

-- The scope every search filters on: its bitmap is ANDed with the full-text index's, so a
-- search reads only the caller's rows (ctxstream/memory/README.md, "Scope in every plan").
CREATE INDEX memories_scope ON memories (tenant, app, user_id, language);
CREATE INDEX memories_text_vector ON memories USING gin (text_vector);

-- Every lexeme of every memory, once: the vocabulary a query word is matched against by
-- trigrams (a name with a letter missing finds the name's lexeme), so the fuzzy step reads
-- short words instead of every memory's text (a trigram index over the texts was measured
-- ten times slower: ctxstream/memory/README.md, "Why OR, why per word, why a vocabulary").
-- Lexemes are neither scoped nor per language: the search still reads only the caller's
-- memories in its language, and a lexeme found only elsewhere matches nothing there, so
-- the answer is the same as with a list per scope and language.
CREATE TABLE memory_lexemes (
    lexeme text PRIMARY KEY
);
CREATE INDEX memory_lexemes_trigrams ON memory_lexemes USING gin (lexeme gin_trgm_ops);
