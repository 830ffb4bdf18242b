-- Memory embeddings: a unit vector per memory, for semantic ranking when an embedder is set.
-- Applied by streams.sink.migrate with search_path = <target schema>, public.
-- pgvector is not used (Debian's postgresql-15 does not ship it): vectors are real[] and the
-- search computes cosine similarity (a dot product of unit vectors) over its lexical
-- candidates only (ctxstream/memory/README.md, "Semantic ranking").

-- NULL until the sink's embedding pass fills it (streams/sink/read_model/memory_embeddings.py);
-- a memory without one ranks lexically only.
ALTER TABLE memories ADD COLUMN embedding real[];

-- The pass reads the memories still without an embedding, oldest first.
CREATE INDEX memories_unembedded ON memories (id) WHERE embedding IS NULL;
