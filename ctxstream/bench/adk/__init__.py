"""``ctxstream bench adk``: a turn of an ADK agent on ctxstream and on ADK's SQLite services."""
