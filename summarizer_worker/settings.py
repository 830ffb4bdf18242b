"""Everything the summarizer worker reads from its environment, validated at startup."""

from __future__ import annotations

from typing import Final, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from schemas.kafka.settings import KafkaSettings
from summarizer_worker.endpoint import endpoint_problem
from summarizer_worker.extractive import DEFAULT_MAX_CHARS, MIN_MAX_CHARS

#: Where a test may make the worker pause (`summarizer_stage_delay_s`): after the
#: window is built, before the summarizer is called, inside the open transaction.
PausePoint = Literal["render", "summarize", "transaction"]
PAUSE_POINTS: Final[tuple[PausePoint, ...]] = ("render", "summarize", "transaction")


class SummarizerSettings(KafkaSettings):
    """The summarizer worker's options, one frozen object per process.

    Every option is an environment variable with the ``CTXSTREAM_`` prefix,
    e.g. ``CTXSTREAM_SUMMARIZER=openai``, ``CTXSTREAM_OPENAI_MODEL=...``. The
    API key is a ``SecretStr``, so logging the settings is safe.
    """

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="for `python -m summarizer_worker`; `ctxstream` has --log-level"
    )
    summarizer_group_id: str = Field(
        default="ctxstream-summarizer", min_length=1, description="the worker's consumer group"
    )
    summarizer_instance_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="a stable name per worker process: static group membership (a restart "
        "takes its partitions back at once, without waiting for the session timeout; a "
        "stopped member keeps them until that timeout)",
    )
    summarizer_concurrency: int = Field(
        default=8, ge=1, le=256, description="requests read and summarized at the same time"
    )
    summarizer_max_pending: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description="uncommitted requests per partition before its consumption pauses",
    )
    summarizer_max_pending_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024 * 1024,
        le=1024 * 1024 * 1024,
        description="bytes of uncommitted requests (key and value) per partition before its "
        "consumption pauses; it resumes below half. Ordinary requests (a few KB) meet the "
        "count first; this stops a run of requests near the 1 MB record limit (large seeds) "
        "from holding about 1 GB per partition under the count bound",
    )
    summarizer_retry_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description="summarizer calls per request on retriable errors: the one retry loop "
        "around a call (a backend makes one attempt per call)",
    )
    summarizer_retry_base_s: float = Field(default=1.0, ge=0, le=60)
    summarizer_retry_max_s: float = Field(default=60.0, ge=0, le=3600)
    summarizer_range_wait_s: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="how long a range may stay past the last stable offset of `events` "
        "(an open transaction) before the request is dead-lettered",
    )
    summarizer_max_slice_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024 * 1024,
        le=1024 * 1024 * 1024,
        description="bytes of a session's records one read keeps (its request's range and "
        "what the session appended after it, up to the last stable offset); over it the "
        "request is refused for good. 16 records at the topic's 1 MB limit, or thousands of "
        "ordinary events; summarizer_concurrency reads at once hold at most 8 x 16 MiB of "
        "records before decoding",
    )
    summarizer_session_timeout_ms: int = Field(default=10_000, ge=6_000, le=300_000)
    summarizer_transaction_timeout_ms: int = Field(default=60_000, ge=1_000, le=900_000)
    summarizer_stage_delay_s: dict[PausePoint, float] = Field(
        default_factory=dict,
        description="fault injection for tests only: seconds to pause at each named stage, "
        'as JSON, e.g. {"transaction": 0.2}; empty in production',
    )
    summarizer_max_summary_chars: int = Field(
        default=16_000,
        ge=500,
        le=100_000,
        description="longest summary text written; a longer reply is clipped before the "
        "summary event is built (about twice what openai_max_tokens lets a model write, "
        "so an obedient model is never clipped; the summary is read into every later "
        "prompt of the session)",
    )
    summarizer: Literal["extractive", "openai"] = "extractive"
    extractive_max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=MIN_MAX_CHARS, le=1_000_000)
    openai_base_url: str = Field(
        default="http://127.0.0.1:8000/v1",
        pattern=r"^https?://\S+$",
        description="the API root; requests go to <root>/chat/completions. https, or http "
        "to a loopback host only; no user name, password, query or fragment",
    )
    openai_model: str = ""
    openai_api_key: SecretStr = SecretStr("")
    openai_timeout_s: float = Field(
        default=60.0, gt=0, le=3600, description="bound on one call, connect to last byte"
    )
    openai_max_tokens: int = Field(
        default=2_048,
        ge=16,
        le=131_072,
        description="max_tokens sent with every call: a summary needs a few hundred words; "
        "2,048 tokens (about 8,000 characters) leave a model room without letting it run on",
    )
    openai_max_reply_bytes: int = Field(
        default=262_144,
        ge=4_096,
        le=16_777_216,
        description="the most bytes of a reply's body read; over it the call is rejected. "
        "A 2,048-token completion is about 8-16 KB of JSON: 256 KiB is ample room",
    )
    summarizer_max_prompt_chars: int = Field(
        default=100_000,
        ge=2_000,
        le=4_000_000,
        description="the most characters of a model prompt; the window's history is cut "
        "(seed start, then the newest events) and says so. About 25,000 tokens: fits a "
        "32k-context model with the reply, and bounds each request body",
    )

    @field_validator("openai_base_url")
    @classmethod
    def _endpoint_keeps_the_key_safe(cls, url: str) -> str:
        if (problem := endpoint_problem(url)) is not None:
            raise ValueError(f"CTXSTREAM_OPENAI_BASE_URL: {problem}")
        return url

    @model_validator(mode="after")
    def _openai_needs_a_model(self) -> Self:
        if self.summarizer == "openai" and not self.openai_model.strip():
            raise ValueError(
                "CTXSTREAM_OPENAI_MODEL is required when CTXSTREAM_SUMMARIZER='openai' "
                f"(got {self.openai_model!r})"
            )
        return self
