-- The read model's views over event_rows and sink_offsets: streams/sink/README.md, "Views".
-- Applied by streams.sink.migrate with search_path = <target schema>, public.
-- Every column is read from the rows' statuses (projections/history/), by the fold's rules.

-- Memories are removed by their source row when a rewind annuls it.
CREATE INDEX memories_source ON memories (partition, "offset");

-- Each record of the log the sink stored, with what the fold made of it.
CREATE VIEW events AS
SELECT session_key, tenant, app, user_id, session_id, partition, "offset", event_id,
       invocation_id, author, event_timestamp AS "timestamp", status, lossy, event
FROM event_rows;

-- Per session, the records the fold shows: per isolation scope, the surviving summaries and the
-- raw events they do not mask, after rewinds (projections.history.live_history).
CREATE VIEW live_history AS
SELECT session_key, partition, "offset", event_id, invocation_id, author,
       event_timestamp AS "timestamp", event->>'isolationScope' AS isolation_scope, event
FROM event_rows
WHERE status = 'live';

-- Every summary (actions.compaction set), whatever its status: the range of the session's raw
-- events it stands in for (both ends inclusive, as masking reads it), and its text.
CREATE VIEW summaries AS
SELECT session_key, partition, "offset", event_id, status,
       event->>'isolationScope' AS isolation_scope,
       (event #>> '{actions,compaction,startTimestamp}')::double precision AS start_timestamp,
       (event #>> '{actions,compaction,endTimestamp}')::double precision AS end_timestamp,
       event #>> '{customMetadata,ctxstream,compaction_request_id}' AS request_id,
       (SELECT string_agg(part->>'text', E'\n' ORDER BY position)
        FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(event #> '{actions,compaction,compactedContent,parts}') = 'array'
                 THEN event #> '{actions,compaction,compactedContent,parts}'
                 ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS parts(part, position)
        WHERE coalesce(part->>'text', '') <> ''
          AND coalesce(part->>'thought', 'false') <> 'true') AS text,
       event #> '{actions,compaction,compactedContent}' AS compacted_content,
       event_timestamp AS "timestamp"
FROM event_rows
WHERE jsonb_typeof(event #> '{actions,compaction}') = 'object';

-- One row per session. invocations: distinct non-empty invocation ids of the raw events the
-- fold keeps (live or masked; projections/fold/invocations.py). Token totals: every count an
-- applied record reported, rewound ones and summaries included, saturating at int64's maximum
-- (projections/fold/token_usage.py). The compaction boundary: the latest surviving unscoped
-- summary (projections/compaction/summary_ledger.py), a live unscoped summary's row.
-- A deletion record makes every earlier row `deleted`: `created` is the first row of the
-- current incarnation (neither `deleted` nor `deletion`), and `deleted` says there is none.
CREATE VIEW sessions AS
SELECT s.tenant, s.app, s.user_id, s.session_id, s.session_key, s.partition,
       s.created, s.last_activity, s.last_offset, s.records, s.deleted, s.invocations,
       s.prompt_tokens, s.candidates_tokens,
       b."offset" AS boundary_offset, b.start_timestamp AS boundary_start,
       b.end_timestamp AS boundary_end
FROM (
    SELECT session_key, tenant, app, user_id, session_id, min(partition) AS partition,
           (array_agg(event_timestamp ORDER BY "offset")
                FILTER (WHERE status NOT IN ('deleted', 'deletion')))[1] AS created,
           (array_agg(event_timestamp ORDER BY "offset" DESC))[1] AS last_activity,
           max("offset") AS last_offset,
           count(*) AS records,
           bool_and(status IN ('deleted', 'deletion')) AS deleted,
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

-- Up to where the views are consistent: every record of `topic`'s `partition` below
-- `next_offset` is in them (with its status), none at or above it. A reader that appended
-- at (partition, offset) waits until next_offset > offset.
CREATE VIEW consistent_as_of AS
SELECT topic, partition, next_offset FROM sink_offsets;
