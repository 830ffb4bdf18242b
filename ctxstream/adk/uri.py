"""The ``ctxstream://`` URI ADK's service registry passes to both services. Pure.

``ctxstream://HOST:PORT[,HOST:PORT...]/?tenant=T[&prefix=P][&view=full|live]``: the
brokers, the tenant the sessions belong to, the deployment's topic prefix (as
``ctxstream up`` and the client take it) and the view ``get_session`` serves. No secret
travels in it: the read model's DSN comes from ``CTXSTREAM_POSTGRES_DSN`` and its target
schema from ``CTXSTREAM_SINK_SCHEMA`` (:func:`read_model_location`).

Example::

    parse_uri("ctxstream://127.0.0.1:9092/?tenant=acme&view=live")
    -> ServiceUri(bootstrap="127.0.0.1:9092", tenant="acme", prefix=None, view="live")
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import parse_qsl, urlsplit

from schemas.errors import InvalidSessionKeyError
from schemas.kafka.settings import TOPIC_PREFIX_PATTERN
from schemas.keys import parse_session_key

View = Literal["full", "live"]
SCHEME: Final = "ctxstream"
DEFAULT_SCHEMA: Final = "ctxstream"
#: The query parameters a URI may carry.
KNOWN_PARAMETERS: Final = frozenset({"tenant", "prefix", "view"})
#: Words that mark a parameter as a secret (refused whatever their spelling).
_SECRET_WORDS: Final = ("pass", "secret", "token", "key", "dsn", "credential", "auth", "pwd")
_BROKER: Final = re.compile(r"^[A-Za-z0-9._-]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$")


@dataclass(frozen=True, slots=True)
class ServiceUri:
    """What a ``ctxstream://`` URI names.

    Attributes:
        bootstrap: The brokers, ``HOST:PORT`` comma-separated, as the client takes them.
        tenant: The tenant every session of the service belongs to.
        prefix: The deployment's topic prefix (None: the ``CTXSTREAM_TOPIC_PREFIX`` default).
        view: ``full`` (every event, the default) or ``live`` (what the future can need).
    """

    bootstrap: str
    tenant: str
    prefix: str | None = None
    view: View = "full"


def parse_uri(uri: str) -> ServiceUri:
    """The brokers, tenant, prefix and view `uri` names.

    Raises:
        ValueError: Not a ``ctxstream://`` URI, credentials or a path in it, a broker
            that is not ``HOST:PORT``, a missing, repeated, unknown or secret-looking
            parameter, or a bad tenant, prefix or view; the message names which.
    """
    parts = urlsplit(uri)
    if parts.scheme != SCHEME:
        raise ValueError(f"session service URI: scheme {parts.scheme!r}, expected {SCHEME!r}")
    if "@" in parts.netloc:
        raise ValueError("session service URI: credentials are never part of it")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(f"session service URI: unexpected path {parts.path!r}")
    brokers = parts.netloc.split(",")
    for broker in brokers:
        if not _BROKER.match(broker):
            raise ValueError(f"session service URI: broker {broker!r} is not HOST:PORT")
    parameters = _parameters(parts.query)
    tenant = parameters.get("tenant")
    if tenant is None:
        raise ValueError("session service URI: the tenant parameter is required")
    try:
        parse_session_key(f"{tenant}/a/u/s")
    except InvalidSessionKeyError as exc:
        raise ValueError(f"session service URI: tenant {tenant!r} is refused: {exc}") from None
    prefix = parameters.get("prefix")
    if prefix is not None and not re.match(TOPIC_PREFIX_PATTERN, prefix):
        raise ValueError(
            f"session service URI: prefix {prefix!r} must match {TOPIC_PREFIX_PATTERN}"
        )
    view = parameters.get("view", "full")
    if view not in ("full", "live"):
        raise ValueError(f"session service URI: view {view!r}, expected 'full' or 'live'")
    return ServiceUri(",".join(brokers), tenant, prefix, "full" if view == "full" else "live")


def _parameters(query: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if any(word in name.lower() for word in _SECRET_WORDS):
            raise ValueError(
                f"session service URI: parameter {name!r} looks like a secret; secrets never "
                "go in the URI (the read model's DSN is CTXSTREAM_POSTGRES_DSN)"
            )
        if name not in KNOWN_PARAMETERS:
            known = ", ".join(sorted(KNOWN_PARAMETERS))
            raise ValueError(f"session service URI: unknown parameter {name!r} (known: {known})")
        if name in found:
            raise ValueError(f"session service URI: parameter {name!r} is given twice")
        found[name] = value
    return found


def read_model_location(environ: Mapping[str, str]) -> tuple[str, str]:
    """The read model's DSN and target schema, from ``CTXSTREAM_POSTGRES_DSN`` and ``..._SCHEMA``.

    Raises:
        ValueError: ``CTXSTREAM_POSTGRES_DSN`` is not set (the services read the SQL model).
    """
    dsn = environ.get("CTXSTREAM_POSTGRES_DSN", "").strip()
    if not dsn:
        raise ValueError(
            "CTXSTREAM_POSTGRES_DSN is not set: the ctxstream ADK services read the SQL read "
            "model the sink writes (ctxstream up sets it up)"
        )
    return dsn, environ.get("CTXSTREAM_SINK_SCHEMA", "").strip() or DEFAULT_SCHEMA
