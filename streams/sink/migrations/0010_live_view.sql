-- Each session's live view (projections/live_view/): the offset its kept suffix starts at and
-- the kept offsets before it, kept by the sink in each batch's transaction. A view=live read is
-- then `"offset" >= live_from OR "offset" = ANY(live_extra)` of the session's held rows, by
-- event_rows_session_offset. streams/sink/README.md, "The live view".
-- Applied by streams.sink.migrate with search_path = <target schema>, public.

-- NULL: not selected yet (a session with no batch since this migration): a read serves every
-- held row, which ADK's readers answer the same on. The sink selects it at the session's next
-- batch; a replay into a fresh schema selects every session's.
ALTER TABLE session_index
    ADD COLUMN live_from bigint CHECK (live_from >= 0),
    ADD COLUMN live_extra bigint[];
