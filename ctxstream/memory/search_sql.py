"""The two statements of a memory search, composed for a target schema. Pure.

``ctxstream/memory/README.md`` explains the ranking, the dedupe and the measurements
behind them; in short:

1. :data:`QUERY_LEXEMES`: the query's lexemes (``to_tsvector`` in the search's
   language: stop words gone, stemmed, deduplicated);
2. :func:`search_statement`: each query word (up to :data:`MAX_FUZZY_WORDS`) with the
   vocabulary lexemes it matches by trigrams (``word <% lexeme``: ``word_similarity``
   at least pg_trgm's threshold, 0.6 by default), and itself at similarity 1; their OR
   as a ``tsquery`` (each lexeme quoted as ``tsquery`` input in SQL, never formatted into
   the statement); the scope's memories that match it (full-text GIN ANDed with the
   scope index), scored ``ts_rank_cd(text_vector, that OR) + the sum over query words
   of the best similarity among their lexemes the memory holds``; a raw event covered
   by a summary hit of its session, and a summary inside another summary hit's range,
   dropped before the limit, the summary standing in for them with the best of its
   own score and theirs.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

#: At most this many query words are matched against the vocabulary for typos (lexemes
#: in alphabetical order); all of them are matched exactly.
MAX_FUZZY_WORDS: Final = 32

QUERY_LEXEMES: Final = sql.SQL(
    "SELECT tsvector_to_array(to_tsvector(%(language)s::regconfig, %(query)s))"
)

_NEAR: Final = (
    "SELECT {word} AS word, v.lexeme, word_similarity({word}, v.lexeme) AS similarity"
    " FROM {lexemes} AS v WHERE {word} <%% v.lexeme"
)

_SEARCH: Final = r"""
WITH near AS (
    {near}
    UNION ALL
    SELECT lexeme, lexeme, 1 FROM unnest(%(lexemes)s::text[]) AS lexeme
),
terms AS (
    SELECT word, lexeme, max(similarity) AS similarity, quoted, quoted::tsquery AS one
    FROM (SELECT near.*, '''' || replace(replace(lexeme, E'\\', E'\\\\'), '''', '''''')
                 || '''' AS quoted FROM near) AS near
    GROUP BY word, lexeme, quoted
),
query AS (
    SELECT string_agg(DISTINCT quoted, ' | ')::tsquery AS any_lexeme FROM terms
),
hits AS (
    SELECT m.id, m.memory_id, m.session_key, m."offset", m.author, m.role,
           m.event_timestamp, m.kind, m.covered_start, m.covered_end, m.text,
           ts_rank_cd(m.text_vector, q.any_lexeme) + (
               SELECT coalesce(sum(best), 0) FROM (
                   SELECT max(t.similarity) AS best FROM terms AS t
                   WHERE m.text_vector @@ t.one GROUP BY t.word
               ) AS per_word
           ) AS score
    FROM {memories} AS m, query AS q
    WHERE m.tenant = %(tenant)s AND m.app = %(app)s AND m.user_id = %(user_id)s
      AND m.language = %(language)s::regconfig AND m.text_vector @@ q.any_lexeme
),
covers AS (
    SELECT s.id AS summary_id, h.id AS covered_id, h.score AS covered_score
    FROM hits AS s JOIN hits AS h ON h.session_key = s.session_key AND h.id <> s.id
    WHERE s.kind = 'summary'
      AND CASE h.kind
          WHEN 'event' THEN h.event_timestamp BETWEEN s.covered_start AND s.covered_end
          ELSE s.covered_start <= h.covered_start AND s.covered_end >= h.covered_end
               AND (s.covered_start < h.covered_start OR s.covered_end > h.covered_end
                    OR s."offset" > h."offset")
          END
),
ranked AS (
    SELECT h.*, greatest(h.score, b.covered_best) AS best
    FROM hits AS h
    LEFT JOIN (SELECT summary_id, max(covered_score) AS covered_best FROM covers
               GROUP BY summary_id) AS b ON b.summary_id = h.id
    WHERE NOT EXISTS (SELECT 1 FROM covers AS c WHERE c.covered_id = h.id)
)
{tail}
"""

_LEXICAL: Final = """
SELECT memory_id, author, role, event_timestamp, text, kind, session_key, best AS score
FROM ranked
ORDER BY best DESC, event_timestamp DESC, id DESC
LIMIT %(limit)s
"""

#: The lexical top ``depth`` re-ranked: (1 - w) * best / max(best) + w * max(0, cosine).
_SEMANTIC: Final = """, lexical AS (
    SELECT * FROM ranked ORDER BY best DESC, event_timestamp DESC, id DESC LIMIT %(depth)s
),
blended AS (
    SELECT l.*, (1 - %(weight)s::double precision) * l.best / nullif(max(l.best) OVER (), 0)
        + %(weight)s::double precision * greatest(0, coalesce((
            SELECT sum(a * b) FROM unnest(m.embedding, %(vector)s::real[]) AS t(a, b)
            WHERE cardinality(m.embedding) = cardinality(%(vector)s::real[])
        ), 0)) AS blended
    FROM lexical AS l JOIN {memories} AS m ON m.id = l.id
)
SELECT memory_id, author, role, event_timestamp, text, kind, session_key,
       coalesce(blended, 0) AS score
FROM blended
ORDER BY 8 DESC, event_timestamp DESC, id DESC
LIMIT %(limit)s
"""


def word_parameter(position: int) -> str:
    """The name of the parameter holding the query word at `position` (``word0``, ...)."""
    return f"word{position}"


def search_statement(schema: str, words: int, *, semantic: bool = False) -> sql.Composed:
    """The search over `schema`'s memories for a query of `words` fuzzy-matched words.

    Its parameters: ``tenant``, ``app``, ``user_id``, ``language``, ``lexemes`` (all the
    query's lexemes), ``limit``, and ``word0`` ... (:func:`word_parameter`) for the first
    `words` of them, at least one. `semantic`: the lexical top ``depth`` re-ranked with the
    query's unit ``vector`` at ``weight`` (ctxstream/memory/README.md, "Semantic ranking").
    """
    lexemes = sql.Identifier(schema, "memory_lexemes")
    near = sql.SQL("\n    UNION ALL\n    ").join(
        sql.SQL(_NEAR).format(word=sql.Placeholder(word_parameter(position)), lexemes=lexemes)
        for position in range(words)
    )
    memories = sql.Identifier(schema, "memories")
    tail = sql.SQL(_SEMANTIC if semantic else _LEXICAL).format(memories=memories)
    return sql.SQL(_SEARCH).format(near=near, memories=memories, tail=tail)
