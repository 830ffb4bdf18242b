"""Which embedder memory uses, from the environment (``CTXSTREAM_MEMORY_EMBEDDINGS_*``).

Unset ``CTXSTREAM_MEMORY_EMBEDDINGS_URL`` (the default): no embedder, memory works offline
with lexical ranking. Set: ``..._URL`` is the endpoint's base (``http://host:port/v1``),
``..._MODEL`` the model's name, and the bearer key is read from the environment variable
named by ``..._KEY_ENV`` (default ``CTXSTREAM_MEMORY_EMBEDDINGS_KEY``; unset: no key), so
the key itself is never a setting that could be printed.
"""

from __future__ import annotations

import os

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams.embeddings.embedder import Embedder
from streams.embeddings.openai_http import DEFAULT_TIMEOUT_S, HttpEmbedder


class EmbeddingSettings(BaseSettings):
    """The embeddings endpoint, or none."""

    model_config = SettingsConfigDict(
        env_prefix="CTXSTREAM_MEMORY_EMBEDDINGS_",
        frozen=True,
        extra="ignore",
        hide_input_in_errors=True,  # a refused URL may hold credentials
    )

    url: str = Field(default="", description="the endpoint's base URL; empty: no embedder")
    model: str = Field(default="", description="the embedding model's name")
    key_env: str = Field(
        default="CTXSTREAM_MEMORY_EMBEDDINGS_KEY",
        description="the environment variable holding the bearer key",
    )
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=600)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")  # the value itself is not echoed
        if "@" in value.split("//", 1)[-1].split("/", 1)[0]:
            raise ValueError("the URL carries credentials; put the key in the key variable")
        return value

    def embedder(self) -> Embedder | None:
        """The configured embedder, None when no URL is set.

        Raises:
            ValueError: A URL without a model.
        """
        if not self.url:
            return None
        if not self.model:
            raise ValueError("CTXSTREAM_MEMORY_EMBEDDINGS_MODEL: set it with the URL")
        key = os.environ.get(self.key_env, "")
        secret = SecretStr(key) if key else None
        return HttpEmbedder(self.url, self.model, secret, timeout_s=self.timeout_s)
