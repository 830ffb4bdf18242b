"""The SQL read model's sink: `events` into PostgreSQL, offsets in the same transaction.

``streams/sink/README.md`` has the design; :mod:`streams.sink.worker` the process.
"""
