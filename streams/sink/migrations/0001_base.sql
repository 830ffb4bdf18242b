-- The sink's base: its offsets and one row per `events` record.
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;

-- The consumer position after the last batch written, per partition (never a count).
CREATE TABLE sink_offsets (
    topic text NOT NULL,
    partition integer NOT NULL CHECK (partition >= 0),
    next_offset bigint NOT NULL CHECK (next_offset >= 0),
    PRIMARY KEY (topic, partition)
);

-- One row per decodable `events` record, at its (partition, offset): written once.
CREATE TABLE event_rows (
    partition integer NOT NULL CHECK (partition >= 0),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    session_key text NOT NULL,
    tenant text NOT NULL,
    app text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    event_id text NOT NULL,
    invocation_id text NOT NULL,
    author text NOT NULL,
    event_timestamp double precision NOT NULL,
    producer_id text NOT NULL,
    idempotency_key text NOT NULL,
    event jsonb NOT NULL,
    raw bytea,
    lossy boolean NOT NULL,
    PRIMARY KEY (partition, "offset"),
    CONSTRAINT event_rows_raw_iff_lossy CHECK (lossy = (raw IS NOT NULL))
);

CREATE INDEX event_rows_session_offset ON event_rows (session_key, "offset");
