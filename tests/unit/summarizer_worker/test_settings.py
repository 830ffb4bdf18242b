"""The summarizer worker's settings and the backend they choose."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from schemas.kafka.settings import TOPIC_ROLES
from streams.topics import topic_specs
from summarizer_worker.backends import make_summarizer, open_summarizer
from summarizer_worker.endpoint import shown_endpoint
from summarizer_worker.extractive import ExtractiveSummarizer
from summarizer_worker.openai_chat import OpenAIChatSummarizer
from summarizer_worker.settings import SummarizerSettings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SUMMARIZER",
        "OPENAI_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "KAFKA_BOOTSTRAP",
        "KAFKA_PORT",  # the default bootstrap follows it
    ):
        monkeypatch.delenv(f"CTXSTREAM_{name}", raising=False)


def test_the_defaults_need_no_network() -> None:
    settings = SummarizerSettings()
    assert settings.summarizer == "extractive"
    assert settings.kafka_bootstrap == "127.0.0.1:9092"
    assert settings.openai_base_url.startswith("http://127.0.0.1:")
    assert isinstance(make_summarizer(settings), ExtractiveSummarizer)


def test_options_come_from_the_environment_and_the_key_stays_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXSTREAM_SUMMARIZER", "openai")
    monkeypatch.setenv("CTXSTREAM_OPENAI_MODEL", "small-model")
    monkeypatch.setenv("CTXSTREAM_OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("CTXSTREAM_OPENAI_MAX_TOKENS", "500")

    settings = SummarizerSettings()

    assert (settings.summarizer, settings.openai_model) == ("openai", "small-model")
    assert settings.openai_max_tokens == 500
    assert settings.openai_api_key.get_secret_value() == "sk-from-env"
    assert "sk-from-env" not in repr(settings)
    assert "sk-from-env" not in str(settings.model_dump())


def test_openai_without_a_model_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValidationError, match="CTXSTREAM_OPENAI_MODEL is required"):
        SummarizerSettings(summarizer="openai")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("summarizer", "gemini"),
        ("extractive_max_chars", 10),
        ("openai_max_tokens", 0),
        ("openai_max_reply_bytes", 100),
        ("openai_timeout_s", 0),
        ("openai_base_url", "127.0.0.1:8000"),
        ("openai_base_url", "http://api.example.com/v1"),
        ("openai_base_url", "https://user:pw@api.example.com/v1"),
        ("openai_base_url", "https://api.example.com/v1?key=k"),
        ("summarizer_max_prompt_chars", 100),
        ("summarizer_max_summary_chars", 10),
        ("summarizer_max_pending_bytes", 10),
        ("summarizer_max_slice_bytes", 10),
    ],
)
def test_bad_values_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        SummarizerSettings.model_validate({field: value})


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/v1",
        "http://127.0.0.1:8000/v1",
        "http://localhost:8000/v1",
        "http://[::1]:8000/v1",
        "http://127.0.0.2/v1",
    ],
)
def test_https_anywhere_and_http_to_loopback_are_accepted(url: str) -> None:
    assert SummarizerSettings(openai_base_url=url).openai_base_url == url


def test_a_logged_endpoint_shows_scheme_host_and_path_only() -> None:
    assert shown_endpoint("https://user:pw@api.example.com:8443/v1?key=k#f") == (
        "https://api.example.com:8443/v1"
    )
    assert shown_endpoint("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert shown_endpoint("http://host:notaport/") == "<invalid URL>"


def test_every_bound_has_a_default() -> None:
    settings = SummarizerSettings()
    assert settings.openai_max_tokens == 2_048
    assert settings.openai_max_reply_bytes == 262_144
    assert settings.summarizer_max_prompt_chars == 100_000
    assert settings.summarizer_max_summary_chars == 16_000
    assert settings.summarizer_max_pending_bytes == 8 * 1024 * 1024
    assert settings.summarizer_max_slice_bytes == 16 * 1024 * 1024


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError):
        SummarizerSettings().summarizer = "openai"  # type: ignore[misc]  # frozen on purpose


async def test_openai_settings_make_an_openai_backend_that_closes() -> None:
    settings = SummarizerSettings(
        summarizer="openai", openai_model="m", openai_api_key=SecretStr("k")
    )
    made = make_summarizer(settings)
    assert isinstance(made, OpenAIChatSummarizer)
    await made.aclose()
    async with open_summarizer(settings) as opened:
        assert isinstance(opened, OpenAIChatSummarizer)


def test_topic_names_are_the_ones_the_deployment_creates() -> None:
    worker = SummarizerSettings(topic_prefix="acme-prod")
    assert [worker.topic(role) for role in TOPIC_ROLES] == [
        "acme-prod.events",
        "acme-prod.compaction-requests",
        "acme-prod.projections",
        "acme-prod.dead-letters",
        "acme-prod.partition-owners",
        "acme-prod.api-keys",
    ]
    assert {spec.name for spec in topic_specs(worker)} == {worker.topic(r) for r in TOPIC_ROLES}
