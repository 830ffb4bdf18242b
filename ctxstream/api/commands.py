"""``ctxstream serve`` and ``ctxstream keys create|revoke|list``: the HTTP API's commands.

``keys create TENANT`` prints the new key's secret, once, as the only line on
standard output (``KEY=$(ctxstream keys create acme)``) and what it is on
standard error; only its salted hash is stored. ``keys list`` prints one line
per live key, ``<key id> <tenant> <created at>`` (tab-separated), never a
secret or a hash; ``keys revoke KEY_ID`` writes the key's tombstone. Every
error is one line on standard error and a non-zero exit: 2 for a bad
argument, 1 for a broker or key the command cannot use.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import sys
from datetime import UTC, datetime

from pydantic import ValidationError

from ctxstream.api.key_store import KeyDirectory, ensure_keys_topic, revoke_key, store_key
from ctxstream.api.keys import ApiKeyRecord, IssuedKey, issue_key
from ctxstream.broker_calls import broker_calls
from ctxstream.cli.common import Subcommands, fail
from ctxstream.errors import InvalidArgumentError
from ctxstream.subscription import CONNECT_TIMEOUT_S
from ctxstream.subscription_request import checked_tenant
from schemas.errors import CtxstreamError
from schemas.kafka.settings import KafkaSettings
from schemas.log_text import shown


def add_api_commands(commands: Subcommands) -> None:
    """Add ``serve`` and ``keys`` to the ``ctxstream`` command's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API (FastAPI on uvicorn; OpenAPI at /docs) with the settings of "
        "CTXSTREAM_* variables: HTTP_BIND, HTTP_PORT, ...",
    )
    serve.set_defaults(run=_serve)

    keys = commands.add_parser("keys", help="manage the HTTP API's per-tenant keys")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_commands.add_parser(
        "create", help="make a key of TENANT; prints its secret once (only its hash is stored)"
    )
    create.add_argument("tenant", metavar="TENANT")
    create.set_defaults(run=_keys_create)
    revoke = keys_commands.add_parser(
        "revoke", help="revoke a key: the server refuses it within seconds"
    )
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.set_defaults(run=_keys_revoke)
    listed = keys_commands.add_parser(
        "list", help="print the live keys: key id, tenant, creation time (no secrets)"
    )
    listed.add_argument("--tenant", help="only this tenant's keys")
    listed.set_defaults(run=_keys_list)


async def create_key(settings: KafkaSettings, tenant: str) -> IssuedKey:
    """Issue a key of `tenant` and store its record; the secret is in the result only.

    Raises:
        InvalidArgumentError: `tenant` is not a tenant id.
        BrokerUnavailableError: The broker did not take the record in time.
    """
    issued = issue_key(
        checked_tenant(tenant),
        key_id=secrets.token_hex(8),
        token=secrets.token_urlsafe(32),
        salt=secrets.token_bytes(16),
        created_at=datetime.now(UTC),
    )
    async with broker_calls(settings.kafka_bootstrap, CONNECT_TIMEOUT_S):
        await ensure_keys_topic(settings)
        await store_key(settings, issued.record)
    return issued


async def live_keys(settings: KafkaSettings) -> dict[str, ApiKeyRecord]:
    """Every live key of the deployment, by key id.

    Raises:
        BrokerUnavailableError: The broker did not answer in time.
    """
    directory = KeyDirectory(settings)
    try:
        async with broker_calls(settings.kafka_bootstrap, CONNECT_TIMEOUT_S):
            await ensure_keys_topic(settings)
            await directory.catch_up()
        return dict(directory.records)
    finally:
        await directory.close()


def _serve(_: argparse.Namespace) -> int:
    from ctxstream.api.server import serve
    from ctxstream.api.settings import ServeSettings

    try:
        settings = ServeSettings()
    except ValidationError as exc:
        return fail("serve", f"settings: {exc}", status=2)
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 0
    except (CtxstreamError, OSError) as exc:
        return fail("serve", str(exc))
    return 0


def _keys_create(args: argparse.Namespace) -> int:
    _quiet_kafka()
    try:
        issued = asyncio.run(create_key(KafkaSettings(), args.tenant))
    except InvalidArgumentError as exc:
        return fail("keys create", str(exc), status=2)
    except CtxstreamError as exc:
        return fail("keys create", str(exc))
    record = issued.record
    sys.stdout.write(issued.secret + "\n")
    sys.stderr.write(
        f"created key {record.key_id} of tenant {record.tenant}: the line above is its secret, "
        "shown this once; send it as 'Authorization: Bearer <secret>'\n"
    )
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    _quiet_kafka()
    settings = KafkaSettings()
    key_id: str = args.key_id
    try:
        if key_id not in asyncio.run(live_keys(settings)):
            return fail("keys revoke", f"no live key {key_id!r} (ctxstream keys list)")
        asyncio.run(revoke_key(settings, key_id))
    except CtxstreamError as exc:
        return fail("keys revoke", str(exc))
    sys.stdout.write(f"revoked {key_id}\n")
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    _quiet_kafka()
    tenant: str | None = args.tenant
    try:
        records = asyncio.run(live_keys(KafkaSettings()))
    except CtxstreamError as exc:
        return fail("keys list", str(exc))
    for record in sorted(records.values(), key=lambda r: (r.tenant, r.created_at, r.key_id)):
        if tenant is None or record.tenant == tenant:
            created = record.created_at.isoformat(timespec="seconds")
            sys.stdout.write(f"{record.key_id}\t{shown(record.tenant)}\t{created}\n")
    return 0


def _quiet_kafka() -> None:
    # A broker the command cannot use is reported in one line of its own; aiokafka
    # would log each failed attempt around it, and the topic and store steps their
    # progress, which the command's own lines say.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    for name in ("schemas.kafka.admin", "ctxstream.api.key_store"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
