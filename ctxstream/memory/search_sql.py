"""The one statement a memory search runs, composed for a target schema. Pure.

The ranking and the dedupe are explained in ``ctxstream/memory/README.md``; in short:

* the query's lexemes (``to_tsvector`` of the query in the search's language: stop
  words gone, stemmed, deduplicated) are ORed into a ``tsquery`` built in SQL, each
  lexeme quoted as ``tsquery`` input (never string-formatted into the statement);
* candidates are the scope's rows whose ``text_vector`` matches that ``tsquery`` (GIN)
  or whose text holds a query word at ``word_similarity`` >= pg_trgm's threshold
  (``word <% text``, trigram GIN, one index probe per word);
* ``score = ts_rank_cd(text_vector, any_lexeme) + sum of word_similarity(word, text)
  over the query words with word <% text``;
* a raw event covered by a summary hit of its session, and a summary inside another
  summary hit's range, are dropped before the limit.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

#: At most this many query words are probed for typos (lexemes in alphabetical order);
#: full-text matching uses all of them.
MAX_TRIGRAM_WORDS: Final = 32

_SCOPE: Final = (
    "m.tenant = %(tenant)s AND m.app = %(app)s AND m.user_id = %(user_id)s"
    " AND m.language = %(language)s::regconfig"
)

_SEARCH: Final = r"""
WITH terms AS (
    SELECT lexemes,
           CASE WHEN cardinality(lexemes) > 0 THEN array_to_string(ARRAY(
               SELECT '''' || replace(replace(lexeme, E'\\', E'\\\\'), '''', '''''') || ''''
               FROM unnest(lexemes) AS lexeme), ' | ')::tsquery END AS any_lexeme,
           lexemes[1:%(max_words)s] AS words
    FROM (SELECT tsvector_to_array(to_tsvector(%(language)s::regconfig, %(query)s))
          AS lexemes) AS parsed
),
candidates AS (
    SELECT m.id FROM {memories} AS m, terms AS t
    WHERE {scope} AND m.text_vector @@ t.any_lexeme
    UNION
    SELECT hit.id FROM terms AS t CROSS JOIN LATERAL unnest(t.words) AS w(word)
    CROSS JOIN LATERAL (
        SELECT m.id FROM {memories} AS m WHERE {scope} AND w.word <%% m.text
    ) AS hit
),
hits AS (
    SELECT m.id, m.memory_id, m.session_key, m."offset", m.author, m.role,
           m.event_timestamp, m.kind, m.covered_start, m.covered_end, m.text,
           coalesce(ts_rank_cd(m.text_vector, t.any_lexeme), 0)
           + (SELECT coalesce(sum(word_similarity(w, m.text)) FILTER (WHERE w <%% m.text), 0)
              FROM unnest(t.words) AS w) AS score
    FROM candidates AS c JOIN {memories} AS m ON m.id = c.id CROSS JOIN terms AS t
)
SELECT h.memory_id, h.author, h.role, h.event_timestamp, h.text, h.kind,
       h.session_key, h.score
FROM hits AS h
WHERE NOT EXISTS (
    SELECT 1 FROM hits AS s
    WHERE s.kind = 'summary' AND s.session_key = h.session_key AND s.id <> h.id
      AND CASE h.kind
          WHEN 'event' THEN h.event_timestamp BETWEEN s.covered_start AND s.covered_end
          ELSE s.covered_start <= h.covered_start AND s.covered_end >= h.covered_end
               AND (s.covered_start < h.covered_start OR s.covered_end > h.covered_end
                    OR s."offset" > h."offset")
          END
)
ORDER BY h.score DESC, h.event_timestamp DESC, h.id DESC
LIMIT %(limit)s
"""


def search_statement(schema: str) -> sql.Composed:
    """The search over `schema`'s ``memories``.

    Its parameters: ``tenant``, ``app``, ``user_id``, ``language``, ``query``, ``limit``
    and ``max_words`` (:data:`MAX_TRIGRAM_WORDS`).
    """
    return sql.SQL(_SEARCH).format(
        memories=sql.Identifier(schema, "memories"), scope=sql.SQL(_SCOPE)
    )
