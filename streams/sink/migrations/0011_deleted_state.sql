-- A deleted session's app: and user: state stays (ADK's delete_session keeps the app and user
-- stores). streams/sink/README.md, "Statuses" and "Views".
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

-- The status a `deleted` row had when a deletion record ended its incarnation; NULL on every
-- other row, and on a row `deleted` on arrival (an answer to a request a deleted incarnation
-- knew: it never had another). Set by the sink in the deletion's transaction. `applied` only
-- from the backfill below: applied, which applied status not known.
ALTER TABLE event_rows
    ADD COLUMN status_before_deletion text
    CONSTRAINT event_rows_status_before_deletion_known CHECK (status_before_deletion IN (
        'live', 'masked', 'superseded', 'rewound', 'rewind', 'duplicate', 'duplicate_summary',
        'partial', 'refusal', 'fork', 'memory', 'stale', 'creation', 'applied'
    )),
    ADD CONSTRAINT event_rows_status_before_deletion_of_deleted
        CHECK (status_before_deletion IS NULL OR status = 'deleted');

-- Rows deleted before this migration: their status before the deletion is known only from the
-- fold over the session's records; SQL gives it where the row and its neighbours decide it,
-- never claiming applied a record the fold passed over. Applied for sure: an event with no
-- pipeline mark but a creation mark, not partial, whose id no earlier row of the session
-- carries (no retry), that is unconditional, or expects -1 as its incarnation's first row, or
-- expects the offset of the session's previous row, itself applied for sure (a chain of
-- writers, as an ADK session service appends). Others stay NULL, their state left out: sink
-- the log into a new schema (`ctxstream sink --into`) and switch to it for every one.
WITH RECURSIVE ordered AS (
    SELECT partition, "offset", session_key, status, expected_offset, event, event_id,
           lag("offset") OVER w AS previous_offset, lag(status) OVER w AS previous_status
    FROM event_rows
    WINDOW w AS (PARTITION BY session_key ORDER BY "offset")
), plain AS (
    SELECT o.*,
           coalesce(o.event #> '{customMetadata,ctxstream,session_created}' = 'true', false)
               AS creation
    FROM ordered AS o
    WHERE o.status = 'deleted'
      AND NOT coalesce(o.event #> '{partial}' = 'true', false)
      AND (o.event #> '{customMetadata,ctxstream}' IS NULL
           OR o.event #> '{customMetadata,ctxstream}' = '{"session_created": true}')
      AND NOT EXISTS (
          SELECT 1 FROM event_rows AS e
          WHERE e.session_key = o.session_key AND e."offset" < o."offset"
            AND o.event_id <> '' AND e.event_id = o.event_id)
), applied AS (
    SELECT p.partition, p."offset", p.session_key, p.creation
    FROM plain AS p
    WHERE p.expected_offset IS NULL
       OR (p.expected_offset = -1
           AND (p.previous_offset IS NULL OR p.previous_status = 'deletion'))
    UNION
    SELECT p.partition, p."offset", p.session_key, p.creation
    FROM plain AS p
    JOIN applied AS a
      ON a.session_key = p.session_key AND a."offset" = p.previous_offset
     AND p.expected_offset = p.previous_offset
)
UPDATE event_rows AS r
SET status_before_deletion = CASE WHEN a.creation THEN 'creation' ELSE 'applied' END
FROM applied AS a
WHERE r.partition = a.partition AND r."offset" = a."offset";

-- A deleted incarnation's app: and user: writes count as they did before its deletion; its
-- session-scope writes do not (the session's own state goes with it). Otherwise as in
-- 0009_conditional.sql.
CREATE OR REPLACE VIEW state_writes AS
SELECT w.scope, w.key, w.value, r.tenant, r.app, r.user_id, r.session_key, r.partition,
       r."offset", r.event_timestamp
FROM event_rows AS r
CROSS JOIN LATERAL jsonb_each(r.event #> '{actions,stateDelta}') AS d(key, value)
CROSS JOIN LATERAL (
    SELECT CASE WHEN starts_with(d.key, 'app:') THEN 'app'
                WHEN starts_with(d.key, 'user:') THEN 'user'
                ELSE 'session' END AS scope,
           CASE WHEN starts_with(d.key, 'app:') THEN substr(d.key, 5)
                WHEN starts_with(d.key, 'user:') THEN substr(d.key, 6)
                ELSE d.key END AS key,
           d.value
) AS w
WHERE jsonb_typeof(r.event #> '{actions,stateDelta}') = 'object'
  AND NOT starts_with(d.key, 'temp:')
  AND (r.status IN ('live', 'masked', 'superseded', 'rewound', 'rewind', 'creation')
       OR (r.status = 'deleted' AND w.scope <> 'session'
           AND r.status_before_deletion IN (
               'live', 'masked', 'superseded', 'rewound', 'rewind', 'creation', 'applied')));
