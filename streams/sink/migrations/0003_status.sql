-- Each row's status: what the projector's fold makes of the record (projections/history/).
-- Applied by streams.sink.migrate with search_path = <target schema>, public.
-- The sink computes statuses from a session's records in offset order, so rows written before
-- this migration cannot be given theirs here: a schema that already holds rows is refused
-- (sink the log again into a new schema, which replays it from offset 0).

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM event_rows) THEN
        RAISE EXCEPTION 'event_rows already holds rows without statuses: '
            'migrate a new schema and sink the log into it again';
    END IF;
END
$$;

ALTER TABLE event_rows
    ADD COLUMN status text NOT NULL
    CONSTRAINT event_rows_status_known CHECK (status IN (
        'live', 'masked', 'superseded', 'rewound', 'rewind',
        'duplicate', 'duplicate_summary', 'partial', 'refusal', 'fork', 'deletion', 'deleted'
    ));

-- A session's live history, in offset order, read from the index alone.
CREATE INDEX event_rows_live ON event_rows (session_key, "offset") WHERE status = 'live';
