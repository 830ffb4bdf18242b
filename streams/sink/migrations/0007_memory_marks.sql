-- Memory records (schemas/memory_mark.py): the explicit adds and deletes of memories, on the log.
-- Applied by streams.sink.migrate with search_path = <target schema>, public.
-- ctxstream/memory/README.md, "Modes and records", has what they do; the sink writes
-- memory_marks (streams/sink/read_model/memory_marks.py).

-- A memory record's row has status `memory`: bookkeeping the fold passes over.
ALTER TABLE event_rows DROP CONSTRAINT event_rows_status_known;
ALTER TABLE event_rows ADD CONSTRAINT event_rows_status_known CHECK (status IN (
    'live', 'masked', 'superseded', 'rewound', 'rewind', 'duplicate', 'duplicate_summary',
    'partial', 'refusal', 'fork', 'memory', 'deletion', 'deleted'
));

-- One row per memory record: it adds or deletes the memories of its session's records before
-- it (all of them, or those whose memory id is in `ids`). The latest record after a row that
-- names it decides whether the row has a memory; none: the app's mode (all or explicit).
CREATE TABLE memory_marks (
    partition integer NOT NULL CHECK (partition >= 0),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    session_key text NOT NULL,
    action text NOT NULL CHECK (action IN ('add', 'delete')),
    ids text[] CHECK (ids IS NULL OR cardinality(ids) > 0),
    PRIMARY KEY (partition, "offset")
);
CREATE INDEX memory_marks_session ON memory_marks (session_key, "offset");

-- A memory record is no activity of the session's incarnation: `created` leaves it out, and a
-- deleted session stays deleted when a memory record follows the deletion (as the fold keeps
-- `deleted_at`). Otherwise as in 0004_views.sql.
CREATE OR REPLACE VIEW sessions AS
SELECT s.tenant, s.app, s.user_id, s.session_id, s.session_key, s.partition,
       s.created, s.last_activity, s.last_offset, s.records, s.deleted, s.invocations,
       s.prompt_tokens, s.candidates_tokens,
       b."offset" AS boundary_offset, b.start_timestamp AS boundary_start,
       b.end_timestamp AS boundary_end
FROM (
    SELECT session_key, tenant, app, user_id, session_id, min(partition) AS partition,
           (array_agg(event_timestamp ORDER BY "offset")
                FILTER (WHERE status NOT IN ('deleted', 'deletion', 'memory')))[1] AS created,
           (array_agg(event_timestamp ORDER BY "offset" DESC))[1] AS last_activity,
           max("offset") AS last_offset,
           count(*) AS records,
           bool_and(status IN ('deleted', 'deletion', 'memory'))
               AND bool_or(status = 'deletion') AS deleted,
           count(DISTINCT invocation_id) FILTER (
               WHERE status IN ('live', 'masked') AND invocation_id <> ''
                 AND jsonb_typeof(event #> '{actions,compaction}') IS DISTINCT FROM 'object'
           ) AS invocations,
           least(coalesce(sum((event #>> '{usageMetadata,promptTokenCount}')::numeric)
                 FILTER (WHERE status IN ('live', 'masked', 'superseded', 'rewound', 'rewind')), 0),
                 9223372036854775807)::bigint AS prompt_tokens,
           least(coalesce(sum((event #>> '{usageMetadata,candidatesTokenCount}')::numeric)
                 FILTER (WHERE status IN ('live', 'masked', 'superseded', 'rewound', 'rewind')), 0),
                 9223372036854775807)::bigint AS candidates_tokens
    FROM event_rows
    GROUP BY session_key, tenant, app, user_id, session_id
) AS s
LEFT JOIN LATERAL (
    SELECT "offset", start_timestamp, end_timestamp
    FROM summaries
    WHERE summaries.session_key = s.session_key AND status = 'live' AND isolation_scope IS NULL
    ORDER BY "offset" DESC
    LIMIT 1
) AS b ON true;
