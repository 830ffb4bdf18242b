"""Everything the summarizer worker reads from its environment, validated at startup."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from summarizer_worker.extractive import DEFAULT_MAX_CHARS, MIN_MAX_CHARS


class SummarizerSettings(BaseSettings):
    """The summarizer worker's options, one frozen object per process.

    Every option is an environment variable with the ``CTXSTREAM_`` prefix,
    e.g. ``CTXSTREAM_SUMMARIZER=openai``, ``CTXSTREAM_OPENAI_MODEL=...``. The
    API key is a ``SecretStr``, so logging the settings is safe.
    """

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    kafka_bootstrap: str = "127.0.0.1:9092"
    summarizer_group_id: str = Field(
        default="ctxstream-summarizer", min_length=1, description="the worker's consumer group"
    )
    summarizer: Literal["extractive", "openai"] = "extractive"
    extractive_max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=MIN_MAX_CHARS, le=1_000_000)
    openai_base_url: str = Field(
        default="http://127.0.0.1:8000/v1",
        pattern=r"^https?://\S+$",
        description="the API root; requests go to <root>/chat/completions",
    )
    openai_model: str = ""
    openai_api_key: SecretStr = SecretStr("")
    openai_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    openai_max_retries: int = Field(default=3, ge=0, le=20)
    openai_backoff_base_s: float = Field(default=1.0, ge=0, le=60)
    openai_max_backoff_s: float = Field(default=30.0, ge=0, le=3600)

    @model_validator(mode="after")
    def _openai_needs_a_model(self) -> Self:
        if self.summarizer == "openai" and not self.openai_model.strip():
            raise ValueError(
                "CTXSTREAM_OPENAI_MODEL is required when CTXSTREAM_SUMMARIZER='openai' "
                f"(got {self.openai_model!r})"
            )
        return self
