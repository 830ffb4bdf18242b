"""The HTTP API (``ctxstream serve``): the client's calls over JSON, guarded by per-tenant keys.

:mod:`ctxstream.api.app` holds the routes, :mod:`ctxstream.api.server` starts
them on uvicorn, :mod:`ctxstream.api.keys` and :mod:`ctxstream.api.key_store`
issue, store (hashed, on the deployment's `api-keys` topic) and follow the
keys, :mod:`ctxstream.api.auth` checks them, :mod:`ctxstream.api.errors` turns
every failure into one JSON body, :mod:`ctxstream.api.snapshot_stream` serves
subscriptions as server-sent events, resumable from their ids
(:mod:`ctxstream.api.positions`), and :mod:`ctxstream.api.commands` adds
``serve`` and ``keys`` to the ``ctxstream`` command.
"""
