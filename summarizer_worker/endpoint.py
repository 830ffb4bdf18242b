"""Which summarizer endpoints the worker talks to, and how one is shown in logs. Pure.

The API key goes to the endpoint as a header, so the endpoint must not be
one that exposes it (review L1): plain ``http`` only to this machine
(loopback), no user name or password inside the URL, and no query or
fragment (the worker appends ``/chat/completions`` to the root, and a query
is where gateways put keys). Logs show only the scheme, host and path.

Example: ``https://api.example.com/v1`` and ``http://127.0.0.1:8000/v1`` are
fine; ``http://api.example.com/v1`` and ``https://user:pw@host/v1`` are not.
"""

from __future__ import annotations

import ipaddress
from typing import Final
from urllib.parse import SplitResult, urlsplit

from schemas.log_text import shown

LOOPBACK_NAMES: Final = frozenset({"localhost"})


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address
        return False


def _split(url: str) -> SplitResult | str:
    """The URL's parts, or what is wrong with it."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        return f"not a URL: {exc}"
    return parts


def endpoint_problem(url: str) -> str | None:
    """What makes `url` unfit as the summarizer's API root, or None when it is fine."""
    parts = _split(url)
    if isinstance(parts, str):
        return parts
    if parts.scheme not in ("http", "https"):
        return f"the scheme must be https (or http to a loopback host), not {parts.scheme!r}"
    host = parts.hostname or ""
    if not host:
        return "no host"
    if parts.username is not None or parts.password is not None:
        return "a user name or password in the URL would be logged and sent on; use the API key"
    if parts.query or parts.fragment:
        return "no query or fragment: requests go to <root>/chat/completions"
    if parts.scheme == "http" and not _is_loopback(host):
        return f"http sends the API key in clear text: {host!r} is not a loopback host, use https"
    return None


def shown_endpoint(url: str) -> str:
    """`url` as a log line may show it: scheme, host (and port) and path only.

    Example: ``https://user:pw@api.example.com:8443/v1?key=k`` ->
    ``https://api.example.com:8443/v1``.
    """
    parts = _split(url)
    if isinstance(parts, str):
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return shown(f"{parts.scheme}://{host}{port}{parts.path}")
