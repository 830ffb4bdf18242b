-- Conditional and creation records (projections/README.md, "Conditional records").
-- Applied by streams.sink.migrate with search_path = <target schema>, public.
-- A conditional record the fold refused is `stale`; an applied creation record is `creation`.

ALTER TABLE event_rows DROP CONSTRAINT event_rows_status_known;
ALTER TABLE event_rows ADD CONSTRAINT event_rows_status_known CHECK (status IN (
    'live', 'masked', 'superseded', 'rewound', 'rewind', 'duplicate', 'duplicate_summary',
    'partial', 'refusal', 'fork', 'memory', 'deletion', 'deleted', 'stale', 'creation'
));

-- A conditional record's expected offset (NULL: unconditional), so the classification state
-- rebuilt from a session's rows judges it again as the fold did.
ALTER TABLE event_rows ADD COLUMN expected_offset bigint CHECK (expected_offset >= -1);

-- A creation record's stateDelta is the session's initial state: it writes state as any
-- applied record does. Otherwise as in 0005_state.sql.
CREATE OR REPLACE VIEW state_writes AS
SELECT CASE WHEN starts_with(d.key, 'app:') THEN 'app'
            WHEN starts_with(d.key, 'user:') THEN 'user'
            ELSE 'session' END AS scope,
       CASE WHEN starts_with(d.key, 'app:') THEN substr(d.key, 5)
            WHEN starts_with(d.key, 'user:') THEN substr(d.key, 6)
            ELSE d.key END AS key,
       d.value, r.tenant, r.app, r.user_id, r.session_key, r.partition, r."offset",
       r.event_timestamp
FROM event_rows AS r
CROSS JOIN LATERAL jsonb_each(r.event #> '{actions,stateDelta}') AS d(key, value)
WHERE jsonb_typeof(r.event #> '{actions,stateDelta}') = 'object'
  AND r.status IN ('live', 'masked', 'superseded', 'rewound', 'rewind', 'creation')
  AND NOT starts_with(d.key, 'temp:');

-- A stale row is no activity of an incarnation, like a memory record: `created` leaves it
-- out, and a deleted session stays deleted after one. A session whose rows are all stale or
-- memory records, one of them stale, never existed: it is `deleted` (listed nowhere). A
-- creation row starts an incarnation as any first row after a deletion does. Otherwise as in
-- 0007_memory_marks.sql.
CREATE OR REPLACE VIEW sessions AS
SELECT s.tenant, s.app, s.user_id, s.session_id, s.session_key, s.partition,
       s.created, s.last_activity, s.last_offset, s.records, s.deleted, s.invocations,
       s.prompt_tokens, s.candidates_tokens,
       b."offset" AS boundary_offset, b.start_timestamp AS boundary_start,
       b.end_timestamp AS boundary_end
FROM (
    SELECT session_key, tenant, app, user_id, session_id, min(partition) AS partition,
           (array_agg(event_timestamp ORDER BY "offset")
                FILTER (WHERE status NOT IN ('deleted', 'deletion', 'memory', 'stale')))[1]
               AS created,
           (array_agg(event_timestamp ORDER BY "offset" DESC))[1] AS last_activity,
           max("offset") AS last_offset,
           count(*) AS records,
           bool_and(status IN ('deleted', 'deletion', 'memory', 'stale'))
               AND bool_or(status IN ('deletion', 'stale')) AS deleted,
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

-- The offset of the session's last writer record (-1: none), as the projector's fold keeps it:
-- what a conditional record expects. Kept by the sink in each batch.
ALTER TABLE session_index
    ADD COLUMN writer_offset bigint NOT NULL DEFAULT -1 CHECK (writer_offset >= -1);

-- Rows written before this migration hold no conditional or creation record, so a session's
-- writer record is its highest applied row that is no pipeline summary (a summary naming a
-- compaction request); a deleted incarnation's rows are `deleted`.
UPDATE session_index AS i SET writer_offset = w.writer_offset
FROM (
    SELECT session_key, max("offset") AS writer_offset
    FROM event_rows
    WHERE status IN ('live', 'masked', 'superseded', 'rewound', 'rewind')
      AND NOT coalesce(
          jsonb_typeof(event #> '{actions,compaction}') = 'object'
          AND jsonb_typeof(event #> '{customMetadata,ctxstream,compaction_request_id}') = 'string'
          AND event #>> '{customMetadata,ctxstream,compaction_request_id}' <> '',
          false)
    GROUP BY session_key
) AS w
WHERE i.session_key = w.session_key;
