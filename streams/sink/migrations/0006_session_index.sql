-- One row per session, kept by the sink in each batch's transaction, for listings by index:
-- a tenant's sessions (of an app, of a user), newest first. streams/sink/README.md, "Sessions".
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

-- created, last_activity, last_offset and deleted mean what the `sessions` view's columns mean.
-- session_key sorts in byte order (COLLATE "C"): a listing's ties and its cursor agree with
-- any client's plain string order, whatever the database's locale.
CREATE TABLE session_index (
    session_key text COLLATE "C" PRIMARY KEY,
    tenant text NOT NULL,
    app text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    partition integer NOT NULL CHECK (partition >= 0),
    created double precision,
    last_activity double precision NOT NULL,
    last_offset bigint NOT NULL CHECK (last_offset >= 0),
    deleted boolean NOT NULL
);

-- Newest first, ties by key, of a tenant, of its app, of an app's user: one index each, so a
-- page is read from the index alone whichever filter it has.
CREATE INDEX session_index_tenant ON session_index
    (tenant, last_activity DESC, session_key DESC) WHERE NOT deleted;
CREATE INDEX session_index_app ON session_index
    (tenant, app, last_activity DESC, session_key DESC) WHERE NOT deleted;
CREATE INDEX session_index_user ON session_index
    (tenant, app, user_id, last_activity DESC, session_key DESC) WHERE NOT deleted;

-- A schema that holds rows already gets its sessions from them.
INSERT INTO session_index (session_key, tenant, app, user_id, session_id, partition, created,
                           last_activity, last_offset, deleted)
SELECT session_key, tenant, app, user_id, session_id, partition, created, last_activity,
       last_offset, deleted
FROM sessions;
