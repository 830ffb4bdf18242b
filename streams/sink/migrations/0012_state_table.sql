-- The `state` view read from two tables the sink keeps in each batch's transaction, so a
-- session's merged state is an index lookup, not a pass over its app's state-writing history.
-- The values are those of 0005_state.sql's view over 0011_deleted_state.sql's `state_writes`,
-- which stays as it was. streams/sink/README.md, "Views" ("How `state` is kept").
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

-- Per session, scope and key: the session's last write of the key, the row of `state_writes`
-- at the highest offset. user_id is NULL in app scope, as in `state`. Keys are unbounded text,
-- so the indexes hold their md5, never the key itself (nothing is unique by it: two keys of one
-- md5 share an index entry's value, and every lookup compares the keys too).
CREATE TABLE state_last_writes (
    session_key text NOT NULL,
    scope text NOT NULL CHECK (scope IN ('app', 'user', 'session')),
    key text NOT NULL,
    tenant text NOT NULL,
    app text NOT NULL,
    user_id text,
    value jsonb NOT NULL,
    partition integer NOT NULL CHECK (partition >= 0),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    event_timestamp double precision NOT NULL,
    CONSTRAINT state_last_writes_user_unless_app CHECK ((user_id IS NULL) = (scope = 'app'))
);

-- A session's rows, by scope and key.
CREATE INDEX state_last_writes_session ON state_last_writes (session_key, scope, md5(key));
-- An app's (a user's) rows of a scope; per key, the sessions' last writes latest first by
-- (timestamp, partition, offset): the first is the key's value in `shared_state`.
CREATE INDEX state_last_writes_latest ON state_last_writes
    (tenant, app, scope, user_id, md5(key),
     event_timestamp DESC, partition DESC, "offset" DESC);

-- Per app: and user: key (user_id NULL in app scope), the value of the session whose last
-- write of it is latest by (timestamp, partition, offset), and that write.
CREATE TABLE shared_state (
    scope text NOT NULL CHECK (scope IN ('app', 'user')),
    tenant text NOT NULL,
    app text NOT NULL,
    user_id text,
    key text NOT NULL,
    value jsonb NOT NULL,
    written_by text NOT NULL,
    partition integer NOT NULL CHECK (partition >= 0),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    event_timestamp double precision NOT NULL,
    CONSTRAINT shared_state_user_unless_app CHECK ((user_id IS NULL) = (scope = 'app'))
);

CREATE INDEX shared_state_key ON shared_state (tenant, app, scope, user_id, md5(key));

-- A schema that holds rows already: every session's last writes, and the view's app and user
-- rows as it gives them now.
INSERT INTO state_last_writes (session_key, scope, key, tenant, app, user_id, value, partition,
                               "offset", event_timestamp)
SELECT DISTINCT ON (w.session_key, w.scope, w.key)
       w.session_key, w.scope, w.key, w.tenant, w.app,
       CASE WHEN w.scope = 'app' THEN NULL ELSE w.user_id END,
       w.value, w.partition, w."offset", w.event_timestamp
FROM state_writes AS w
ORDER BY w.session_key, w.scope, w.key, w."offset" DESC;

INSERT INTO shared_state (scope, tenant, app, user_id, key, value, written_by, partition,
                          "offset", event_timestamp)
SELECT scope, tenant, app, user_id, key, value, written_by, partition, "offset", "timestamp"
FROM state
WHERE scope <> 'session';

-- The same columns as before (names, types, order), so readers and the stable views keep
-- working: the session scope from the last writes, the app and user scopes from their values.
CREATE OR REPLACE VIEW state AS
SELECT 'session'::text AS scope, w.tenant, w.app, w.user_id, w.session_key, w.key, w.value,
       w.session_key AS written_by, w.partition, w."offset", w.event_timestamp AS "timestamp"
FROM state_last_writes AS w
WHERE w.scope = 'session'
UNION ALL
SELECT s.scope, s.tenant, s.app, s.user_id, NULL::text, s.key, s.value, s.written_by,
       s.partition, s."offset", s.event_timestamp
FROM shared_state AS s;
