"""`deploy/kafka/start --secure`: each process's principal reaches exactly what it needs.

A secure broker of this module's own (free ports, a fresh data folder, stopped and wiped at
the end) is started with a deployment's names of its own. As ``admin`` every topic is made
and given one record; then each principal tries every produce, fetch, topic creation,
group join and transaction, and the outcomes must equal the matrix below, written here
from the processes' code (which topics each one sends to, reads, creates; which group
and transactional ids it uses), not from `schemas/kafka/acl_table.py`. An operation
missing from a principal's rows must meet the broker's authorization error, one listed
must succeed: too loose and too tight both fail.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.conn import create_conn
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    SaslAuthenticationFailed,
    for_code,
)
from aiokafka.protocol.fetch import FetchRequest
from psycopg import sql
from pydantic import SecretStr, ValidationError

from ctxstream.api.key_store import ensure_keys_topic
from ctxstream.appends.writer import events_producer
from ctxstream.client import Client
from schemas.errors import TopicError
from schemas.kafka.admin import partition_count
from schemas.kafka.settings import TOPIC_ROLES, KafkaSettings
from streams.sink.database import Connection, connect
from streams.sink.migrate import migrate
from streams.sink.replay.log_ends import log_end_offsets
from streams.sink.settings import SinkSettings
from tests.conftest import DEPLOY, REPO, ServiceError, free_ports, run_deploy, unique_topic
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import running_sink, stored_offsets
from tests.support.kafka import (
    WorkerProcess,
    create_deployment_topics,
    projector_settings,
    start_worker,
    stop_worker,
    wait_for,
    worker_env,
)

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 300.0  # a first run also fetches the broker's jars
STOP_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_MS = 10_000
ALLOWED: Final = "allowed"
PRINCIPALS: Final = ("projector", "summarizer", "sink", "http-api")
USERS: Final = ("broker", "admin", *PRINCIPALS)
ROLES: Final = (*TOPIC_ROLES, "changelog")  # the changelog is named by the projector

# What each process's code does on Kafka (the oracle; a role is a topic of the deployment).
WRITES: Final[Mapping[str, set[str]]] = {
    # snapshots, letters, requests and claims in its transactions; its changelog
    "projector": {"projections", "dead-letters", "compaction-requests", "partition-owners"}
    | {"changelog"},
    "summarizer": {"events", "dead-letters"},  # summaries and letters in its transactions
    "sink": {"dead-letters"},
    "http-api": {"events"},  # appends; keys are written by the operators' tools only
}
READS: Final[Mapping[str, set[str]]] = {
    "projector": {"events", "partition-owners", "changelog"},
    "summarizer": {"compaction-requests", "events"},
    "sink": {"events"},
    "http-api": {"events", "projections", "partition-owners", "api-keys"},
}
CREATES: Final[Mapping[str, set[str]]] = {  # the topics the process ensures at its start
    "projector": {"partition-owners", "changelog"},
    "summarizer": set(),
    "sink": set(),
    "http-api": {"api-keys"},
}


@dataclass(frozen=True)
class SecureBroker:
    """The module's broker and the deployment names its ACLs were granted for."""

    bootstrap: str
    credentials: Path
    prefix: str
    projector_app_id: str
    summarizer_group_id: str

    @property
    def port(self) -> str:
        """The client listener's port."""
        return self.bootstrap.rsplit(":", 1)[1]

    def topic(self, role: str) -> str:
        """The deployment's topic of `role` (the changelog is named by the projector)."""
        if role == "changelog":
            return f"{self.projector_app_id}-sessions-changelog"
        return f"{self.prefix}.{role}"

    def groups(self) -> dict[str, str]:
        """Each principal's own consumer group (http-api has none) and one nobody's."""
        return {
            "projector": self.projector_app_id,
            "summarizer": self.summarizer_group_id,
            "sink": f"{self.prefix}-sink-tenant_model",
            "nobody": f"{self.prefix}-other",
        }

    def transactional_ids(self) -> dict[str, str]:
        """One transactional id in each transacting principal's range, and one in nobody's."""
        return {
            "projector": f"{self.projector_app_id}-{self.prefix}.events-0",
            "summarizer": f"{self.summarizer_group_id}-{self.prefix}.compaction-requests-0",
            "nobody": f"{self.prefix}-workload",
        }

    def sasl(self, user: str, password: str | None = None) -> dict[str, Any]:
        """aiokafka's arguments to authenticate as `user` (with its own password by default)."""
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user,
            "sasl_plain_password": password or (self.credentials / user).read_text().strip(),
        }


@pytest.fixture(scope="module")
def secure_broker(session_run_dir: Path) -> Iterator[SecureBroker]:
    """A secure broker of this module, every topic made and holding one record, as admin."""
    data = session_run_dir / "kafka-secure"
    port, controller_port = free_ports(2)
    prefix = unique_topic("secure")
    broker = SecureBroker(
        bootstrap=f"127.0.0.1:{port}",
        credentials=data / "credentials",
        prefix=prefix,
        projector_app_id=f"{prefix}-projector",
        summarizer_group_id=f"{prefix}-summarizer",
    )
    env = {
        "CTXSTREAM_KAFKA_DATA": str(data),
        "CTXSTREAM_KAFKA_PORT": str(port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_FAST": "1",
        "CTXSTREAM_TOPIC_PREFIX": prefix,
        "CTXSTREAM_APP_ID": broker.projector_app_id,
        "CTXSTREAM_SUMMARIZER_GROUP_ID": broker.summarizer_group_id,
    }
    try:
        assert run_deploy("kafka/start", "--secure", env=env, timeout=START_TIMEOUT_S) == (
            broker.bootstrap
        )
        asyncio.run(_seed(broker))
        yield broker
    finally:
        run_deploy("kafka/stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)


async def _seed(broker: SecureBroker) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, **broker.sasl("admin"))
    await admin.start()
    try:
        topics = [NewTopic(broker.topic(role), 1, 1) for role in ROLES]
        response = await admin.create_topics(topics)
        assert [error for _, error, _ in response.topic_errors] == [0] * len(ROLES)
    finally:
        await admin.close()
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", **broker.sasl("admin")
    )
    await producer.start()
    try:
        for role in ROLES:
            await producer.send_and_wait(broker.topic(role), b"seed", key=b"seed")
    finally:
        await producer.stop()


def _outcome(error: BaseException | None) -> str:
    return ALLOWED if error is None else type(error).__name__


async def _produce(broker: SecureBroker, user: str, topic: str) -> str:
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        enable_idempotence=True,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **broker.sasl(user),
    )
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"probe", key=b"probe")
    except KafkaError as exc:
        return _outcome(exc)
    finally:
        await producer.stop()
    return ALLOWED


async def _fetch(broker: SecureBroker, user: str, topic: str) -> str:
    """One Fetch of partition 0 from offset 0: the broker's own answer for the partition.

    A consumer would not say it: for a topic the principal may not even describe,
    aiokafka's consumer retries the metadata forever instead of raising.
    """
    client = AIOKafkaClient(
        bootstrap_servers=broker.bootstrap,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **broker.sasl(user),
    )
    await client.bootstrap()
    try:
        request = FetchRequest(0, 1, 1 << 20, 1, [(topic, [(0, 0, 1 << 20)])])
        response = await client.send(1, request)
    finally:
        await client.close()
    ((answered, partitions),) = response.topics
    partition = partitions[0]
    assert answered == topic
    code, records = partition[1], partition[-1]
    if code != 0:
        return _outcome(for_code(code)())
    assert records, f"{user} may read {topic} but the fetch returned none of its records"
    return ALLOWED


async def _create(broker: SecureBroker, user: str, topic: str) -> str:
    """CreateTopics of an existing topic: exists (36) if allowed, authorization failed if not."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=broker.bootstrap,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **broker.sasl(user),
    )
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()
    ((name, code, _),) = response.topic_errors
    assert name == topic
    return ALLOWED if code == 36 else _outcome(for_code(code)())


async def _join(broker: SecureBroker, user: str, group: str) -> str:
    """Join `group` on `events` (every principal may read it) and fetch the seeded record."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **broker.sasl(user),
    )
    await consumer.start()
    try:
        consumer.subscribe([broker.topic("events")])
        record = await asyncio.wait_for(consumer.getone(), REQUEST_TIMEOUT_MS / 1000)
        assert record.topic == broker.topic("events")
        await consumer.commit()
    except KafkaError as exc:
        return _outcome(exc)
    finally:
        await consumer.stop()
    return ALLOWED


async def _transact(
    broker: SecureBroker,
    user: str,
    transactional_id: str,
    topic: str,
    group: str,
    timeout_ms: int = 30_000,
) -> str:
    """A whole transaction of `transactional_id`: a record to `topic`, offsets of `group`."""
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=transactional_id,
        enable_idempotence=True,
        acks="all",
        transaction_timeout_ms=timeout_ms,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **broker.sasl(user),
    )
    try:
        await producer.start()  # InitProducerId: the transactional id's authorization
        async with producer.transaction():
            await producer.send_and_wait(topic, b"probe", key=b"probe")
            tp = TopicPartition(broker.topic("events"), 0)
            await producer.send_offsets_to_transaction({tp: 1}, group)
    except KafkaError as exc:
        return _outcome(exc)
    finally:
        await producer.stop()
    return ALLOWED


def _expected(allowed: set[str], keys: list[str], refusal: str) -> dict[str, str]:
    return {key: ALLOWED if key in allowed else refusal for key in keys}


#: Each way to use a topic: the probe and what every process's code does that way.
TOPIC_USES: Final = {"produce": (_produce, WRITES), "fetch": (_fetch, READS)}


@pytest.mark.parametrize("user", PRINCIPALS)
@pytest.mark.parametrize("use", TOPIC_USES)
def test_each_principal_produces_and_fetches_only_what_its_process_does(
    secure_broker: SecureBroker, use: str, user: str
) -> None:
    probe_one, done = TOPIC_USES[use]

    async def probe() -> dict[str, str]:
        return {
            role: await probe_one(secure_broker, user, secure_broker.topic(role)) for role in ROLES
        }

    refusal = "TopicAuthorizationFailedError"
    assert asyncio.run(probe()) == _expected(done[user], list(ROLES), refusal)


@pytest.mark.parametrize("user", PRINCIPALS)
def test_each_principal_creates_only_the_topics_its_process_ensures(
    secure_broker: SecureBroker, user: str
) -> None:
    async def probe() -> dict[str, str]:
        made = {
            role: await _create(secure_broker, user, secure_broker.topic(role)) for role in ROLES
        }
        made["a topic of its own"] = await _create(secure_broker, user, unique_topic("rogue"))
        return made

    keys = [*ROLES, "a topic of its own"]
    refusal = "TopicAuthorizationFailedError"
    assert asyncio.run(probe()) == _expected(CREATES[user], keys, refusal)


@pytest.mark.parametrize("user", PRINCIPALS)
def test_each_principal_joins_only_its_own_group(secure_broker: SecureBroker, user: str) -> None:
    groups = secure_broker.groups()

    async def probe() -> dict[str, str]:
        return {owner: await _join(secure_broker, user, group) for owner, group in groups.items()}

    refusal = "GroupAuthorizationFailedError"
    assert asyncio.run(probe()) == _expected({user}, list(groups), refusal)


@pytest.mark.parametrize("user", PRINCIPALS)
def test_each_principal_transacts_only_with_its_own_transactional_ids(
    secure_broker: SecureBroker, user: str
) -> None:
    ids = secure_broker.transactional_ids()
    # A topic the principal writes and its own group (nobody's for one that has none; the
    # transactional id is refused before): the transactional id decides alone.
    topic = secure_broker.topic(sorted(WRITES[user])[0])
    group = secure_broker.groups().get(user, secure_broker.groups()["nobody"])

    async def probe() -> dict[str, str]:
        return {
            owner: await _transact(secure_broker, user, tid, topic, group)
            for owner, tid in ids.items()
        }

    refusal = "TransactionalIdAuthorizationFailed"
    assert asyncio.run(probe()) == _expected({user}, list(ids), refusal)


def test_a_transaction_may_not_outlast_the_bound(secure_broker: SecureBroker) -> None:
    """transaction.max.timeout.ms (2 minutes) bounds how long a hanging transaction stalls."""
    tid = secure_broker.transactional_ids()["projector"]

    def attempt(timeout_ms: int) -> str:
        return asyncio.run(
            _transact(
                secure_broker,
                "projector",
                tid,
                secure_broker.topic("projections"),
                secure_broker.projector_app_id,
                timeout_ms,
            )
        )

    assert attempt(120_000) == ALLOWED
    assert attempt(120_001) == "InvalidTransactionTimeout"


def test_admin_is_refused_nothing(secure_broker: SecureBroker) -> None:
    async def probe() -> dict[str, str]:
        outcomes = {
            f"fetch {role}": await _fetch(secure_broker, "admin", secure_broker.topic(role))
            for role in ROLES
        }
        outcomes["join nobody's group"] = await _join(
            secure_broker, "admin", secure_broker.groups()["nobody"]
        )
        outcomes["transact as nobody"] = await _transact(
            secure_broker,
            "admin",
            secure_broker.transactional_ids()["nobody"],
            secure_broker.topic("api-keys"),
            secure_broker.groups()["nobody"],
        )
        return outcomes

    outcomes = asyncio.run(probe())
    assert outcomes == dict.fromkeys(outcomes, ALLOWED)


@pytest.mark.parametrize("user", USERS)
def test_a_wrong_password_or_an_unknown_user_is_refused(
    secure_broker: SecureBroker, user: str
) -> None:
    host, port = secure_broker.bootstrap.split(":")

    async def connect(name: str, password: str | None) -> str:
        try:
            conn = await create_conn(host, int(port), **secure_broker.sasl(name, password))
        except SaslAuthenticationFailed as exc:
            return _outcome(exc)
        conn.close()
        return ALLOWED

    other = "sink" if user == "admin" else "admin"
    others_password = (secure_broker.credentials / other).read_text().strip()

    async def probe() -> dict[str, str]:
        return {
            "own password": await connect(user, None),
            "another user's password": await connect(user, others_password),
            "unknown user": await connect(f"{user}-impostor", others_password),
        }

    assert asyncio.run(probe()) == {
        "own password": ALLOWED,
        "another user's password": "SaslAuthenticationFailed",
        "unknown user": "SaslAuthenticationFailed",
    }


async def open_client(bootstrap: str) -> None:
    """Connect an admin client without SASL (PLAINTEXT), then close it."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3_000)
    try:
        await admin.start()
    finally:
        await admin.close()


def test_a_client_without_sasl_gets_nothing(secure_broker: SecureBroker) -> None:
    with pytest.raises(KafkaConnectionError):
        asyncio.run(open_client(secure_broker.bootstrap))


def test_the_passwords_are_random_per_folder_and_owner_only(secure_broker: SecureBroker) -> None:
    passwords = {user: (secure_broker.credentials / user).read_text().strip() for user in USERS}
    assert len(set(passwords.values())) == len(USERS)
    assert all(len(password) == 48 for password in passwords.values())
    for user in USERS:
        assert stat.S_IMODE((secure_broker.credentials / user).stat().st_mode) == 0o600
    assert stat.S_IMODE(secure_broker.credentials.stat().st_mode) == 0o700


def test_a_secure_folder_is_never_started_open(secure_broker: SecureBroker) -> None:
    """Without --secure the running broker's folder is refused, not served in the open."""
    data = secure_broker.credentials.parent
    env = {"CTXSTREAM_KAFKA_DATA": str(data), "CTXSTREAM_KAFKA_PORT": secure_broker.port}
    with pytest.raises(ServiceError, match="formatted with --secure"):
        run_deploy("kafka/start", env=env, timeout=START_TIMEOUT_S)


def test_the_projects_clients_authenticate_as_their_settings_say(
    secure_broker: SecureBroker,
) -> None:
    """The project's own clients connect as the principal CTXSTREAM_KAFKA_SASL_* names."""

    def settings_of(user: str) -> KafkaSettings:
        return KafkaSettings(
            kafka_bootstrap=secure_broker.bootstrap,
            topic_prefix=secure_broker.prefix,
            kafka_sasl_username=user,
            kafka_sasl_password=(secure_broker.credentials / user).read_text().strip(),
        )

    door, sink = settings_of("http-api"), settings_of("sink")

    async def probe() -> None:
        # The door ensures the keys' topic (it exists), counts and appends to `events`.
        made = await ensure_keys_topic(door)
        assert made.existing == (secure_broker.topic("api-keys"),)
        events = secure_broker.topic("events")
        count = await partition_count(door.kafka_bootstrap, events, security=door.client_security())
        assert count == 1
        producer = events_producer(door.kafka_bootstrap, security=door.client_security())
        await producer.start()
        try:
            await producer.send_and_wait(events, b"append", key=b"append")
        finally:
            await producer.stop()
        # The sink may not create the keys' topic, nor learn whether it exists.
        with pytest.raises(TopicError, match="could not be created"):
            await ensure_keys_topic(sink)

    asyncio.run(probe())
    with pytest.raises(ValidationError, match="KAFKA_SASL_PASSWORD"):
        KafkaSettings(kafka_sasl_username="sink")


PIPELINE_TIMEOUT_S = 120.0  # cold workers: group joins, restores, one summary


def test_the_pipeline_runs_with_each_process_as_its_own_principal(
    secure_broker: SecureBroker, tmp_path: Path, postgres_dsn: str
) -> None:
    """Projector, summarizer, client and sink work under their ACLs only.

    The ACLs are granted again for a fresh deployment's names (granting adds), its
    topics made as admin; a session then appended through the client (http-api)
    must come back compacted: the projector (projector) asked, the summarizer
    (summarizer) answered in its transaction, the projector folded the answer.
    Then the sink (sink) copies the whole log, summary included, into PostgreSQL.
    """
    prefix = unique_topic("pipeline")
    names = {
        "CTXSTREAM_TOPIC_PREFIX": prefix,
        "CTXSTREAM_APP_ID": f"{prefix}-projector",
        "CTXSTREAM_SUMMARIZER_GROUP_ID": f"{prefix}-summarizer",
    }
    grant = [sys.executable, str(DEPLOY / "kafka" / "grant_acls.py"), secure_broker.bootstrap]
    subprocess.run(
        [*grant, "--credentials", str(secure_broker.credentials)],
        env={**os.environ, **names, "PYTHONPATH": str(REPO)},
        check=True,
        timeout=60,
    )

    def principal(user: str) -> dict[str, Any]:
        password = SecretStr((secure_broker.credentials / user).read_text().strip())
        return {"kafka_sasl_username": user, "kafka_sasl_password": password}

    reads = projector_settings(
        secure_broker.bootstrap, prefix, data_dir=tmp_path, **principal("projector")
    )
    admin = reads.model_copy(update=principal("admin"))
    door = KafkaSettings(
        kafka_bootstrap=secure_broker.bootstrap, topic_prefix=prefix, **principal("http-api")
    )
    summarizer = WorkerProcess(
        env=worker_env(
            secure_broker.bootstrap,
            prefix,
            names["CTXSTREAM_SUMMARIZER_GROUP_ID"],
            CTXSTREAM_KAFKA_SASL_USERNAME="summarizer",
            CTXSTREAM_KAFKA_SASL_PASSWORD=(secure_broker.credentials / "summarizer")
            .read_text()
            .strip(),
        ),
        log_path=tmp_path / "summarizer.log",
    )
    session = "acme/app/u1/s1"
    schema = fresh_schema_name()
    sink = SinkSettings(
        kafka_bootstrap=secure_broker.bootstrap,
        topic_prefix=prefix,
        events_partitions=reads.events_partitions,
        partitions=reads.partitions,
        postgres_dsn=postgres_dsn,
        sink_schema=schema,
        **principal("sink"),
    )

    async def compacted(client: Client, last: int) -> bool:
        contents = await client.context(session, min_offset=last)
        texts = [part.text or "" for content in contents for part in content.parts or []]
        return any("hello 0" in text and "hello 1" in text for text in texts)

    async def run() -> None:
        await create_deployment_topics(admin)
        await summarizer.start()
        try:
            async with Client(settings=door) as client:
                offsets = []
                for i in range(4):  # compaction_interval 3: a request after the third
                    offsets += await client.append_many(session, invocation(i))
                await wait_for(
                    "a summary in the context", lambda: compacted(client, offsets[-1]), 60
                )
        finally:
            assert await summarizer.stop() == 0
        conn = await connect(postgres_dsn)
        try:
            await migrate(conn, schema)
            await sink_copies_the_log(conn)
        finally:
            await conn.close()

    async def sink_copies_the_log(conn: Connection) -> None:
        events = sink.topic("events")
        security = admin.client_security()
        ends = await log_end_offsets(secure_broker.bootstrap, events, security=security)
        ends = {partition: end for partition, end in ends.items() if end > 0}
        async with running_sink(sink):
            await wait_for("the sink at the log's end", lambda: at(conn, events, ends), 60)
        cursor = await conn.execute(
            sql.SQL("SELECT event_id FROM {}").format(sql.Identifier(schema, "event_rows"))
        )
        stored = {row[0] for row in await cursor.fetchall()}
        appended = {f"{kind}{i}" for kind in "er" for i in range(4)}
        assert appended < stored  # and the summary

    async def at(conn: Connection, events: str, ends: dict[int, int]) -> bool:
        return await stored_offsets(conn, schema, events) == ends

    worker = start_worker(reads, tmp_path / "worker.log")
    try:
        asyncio.run(asyncio.wait_for(run(), PIPELINE_TIMEOUT_S))
    finally:
        stop_worker(worker)
        drop_schema(postgres_dsn, schema)
    logs = (tmp_path / "worker.log").read_text() + summarizer.log_since_start()
    assert "AuthorizationFailed" not in logs


def invocation(i: int) -> list[dict[str, Any]]:
    """One user turn and the agent's reply, as ADK's event JSON."""
    return [
        {
            "id": f"e{i}",
            "invocationId": f"inv{i}",
            "author": "user",
            "timestamp": float(i),
            "content": {"role": "user", "parts": [{"text": f"hello {i}"}]},
        },
        {
            "id": f"r{i}",
            "invocationId": f"inv{i}",
            "author": "root",
            "timestamp": i + 0.5,
            "content": {"role": "model", "parts": [{"text": f"reply {i}"}]},
        },
    ]
