-- The `state` view: session state by scope, as of each session's last row (ADK's merge rules:
-- projections/fold/scoped_state.py). streams/sink/README.md, "Views".
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

-- Every key an applied record's stateDelta writes (rewound ones and rewinds included: the fold
-- applies their deltas, and a rewind's delta restores what it annuls), temp: keys left out,
-- app: and user: keys in their scope with the prefix stripped.
-- The rows that write state, by scope: what a reader's filter on tenant and app reads.
CREATE INDEX event_rows_state_writes ON event_rows (tenant, app, user_id, session_key)
    WHERE jsonb_typeof(event #> '{actions,stateDelta}') = 'object';

CREATE VIEW state_writes AS
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
  AND r.status IN ('live', 'masked', 'superseded', 'rewound', 'rewind')
  AND NOT starts_with(d.key, 'temp:');

-- Per scope and key, the value last written. In a session, the last write is the one at the
-- highest offset (the fold's order). An app: or user: key shared by sessions takes the value of
-- the session whose last write of it is latest by (timestamp, partition, offset): sessions have
-- no common order in the log, and an ADK session service applies them in append order.
-- app scope: user_id and session_key NULL; user scope: session_key NULL.
CREATE VIEW state AS
SELECT DISTINCT ON (scope, tenant, app, user_id, session_key, key)
       scope, tenant, app, user_id, session_key, key, value,
       written_by, partition, "offset", event_timestamp AS "timestamp"
FROM (
    -- tenant, app and user_id follow from session_key: listed so a filter on them reaches
    -- the index through both DISTINCT ONs.
    SELECT DISTINCT ON (w.tenant, w.app, w.user_id, w.session_key, w.scope, w.key)
           w.scope, w.tenant, w.app,
           CASE WHEN w.scope = 'app' THEN NULL ELSE w.user_id END AS user_id,
           CASE WHEN w.scope = 'session' THEN w.session_key END AS session_key,
           w.key, w.value, w.session_key AS written_by, w.partition, w."offset",
           w.event_timestamp
    FROM state_writes AS w
    ORDER BY w.tenant, w.app, w.user_id, w.session_key, w.scope, w.key, w."offset" DESC
) AS last_per_session
ORDER BY scope, tenant, app, user_id, session_key, key,
         event_timestamp DESC, partition DESC, "offset" DESC;
