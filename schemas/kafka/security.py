"""How a Kafka client authenticates: aiokafka's SASL arguments from the settings (pure).

A broker started with ``deploy/kafka/start --secure`` accepts only SASL/SCRAM-SHA-512
on its client listener (SASL_PLAINTEXT on 127.0.0.1). Each process is given its own
principal's name and password (``CTXSTREAM_KAFKA_SASL_USERNAME`` and
``CTXSTREAM_KAFKA_SASL_PASSWORD``); with no name set, clients connect in PLAINTEXT,
as to the development broker.
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypedDict

SaslMechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]


class ClientSecurity(TypedDict):
    """Keyword arguments of every aiokafka client (producer, consumer, admin, client)."""

    security_protocol: Literal["PLAINTEXT", "SASL_PLAINTEXT"]
    sasl_mechanism: NotRequired[SaslMechanism]
    sasl_plain_username: NotRequired[str]
    sasl_plain_password: NotRequired[str]


#: A client of the development broker (no SASL): the default of functions given no settings.
PLAINTEXT: Final[ClientSecurity] = {"security_protocol": "PLAINTEXT"}


def client_security(
    username: str | None, password: str | None, mechanism: SaslMechanism = "SCRAM-SHA-512"
) -> ClientSecurity:
    """SASL_PLAINTEXT as `username` with `password` by `mechanism`; PLAINTEXT with no name.

    Raises:
        ValueError: A name without a password: the broker would refuse it anyway,
            with a less telling error.
    """
    if username is None:
        return PLAINTEXT
    if password is None:
        raise ValueError(f"Kafka user {username!r} has no password: set KAFKA_SASL_PASSWORD")
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": username,
        "sasl_plain_password": password,
    }
