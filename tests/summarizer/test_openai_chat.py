"""`OpenAIChatSummarizer` against a real local chat-completions server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from projections.render import build_prompt, render_transcript
from schemas.event import UsageMetadata
from summarizer_worker.errors import SummarizerRejectedError, SummarizerUnavailableError
from summarizer_worker.openai_chat import EXCERPT_CHARS, OpenAIChatSummarizer
from summarizer_worker.summarizers import SummaryResult
from tests.summarizer.chat_server import CHAT_PATH, ChatServer, Reply, completion
from tests.unit.builders import call_event, text_event

API_KEY = "sk-test-0123456789abcdef"
MODEL = "summarizer-model"
BACKOFF_BASE_S = 0.5
MAX_BACKOFF_S = 10.0
SLOW_REPLY_S = 30.0  # far beyond the timeout; the server cuts it short on close
TIMEOUT_S = 0.2

WINDOW = [
    text_event("e1", "inv1", 100.0, "Plan my day"),
    call_event("e2", "inv1", 101.0, "c1", name="get_calendar"),
    text_event("e3", "inv1", 102.0, "You have a standup at 9.", author="planner"),
]


class SleepRecorder:
    """Stands in for asyncio.sleep: notes each delay, returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay_s: float) -> None:
        self.delays.append(delay_s)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


MakeSummarizer = Callable[..., OpenAIChatSummarizer]


@pytest.fixture
async def make(chat_server: ChatServer, sleeps: SleepRecorder) -> AsyncIterator[MakeSummarizer]:
    """Builds summarizers on the local server; closes them all after the test."""
    made: list[OpenAIChatSummarizer] = []

    def build(**overrides: Any) -> OpenAIChatSummarizer:
        options: dict[str, Any] = {
            "base_url": chat_server.base_url,
            "model": MODEL,
            "api_key": SecretStr(API_KEY),
            "timeout_s": 5.0,
            "max_retries": 3,
            "backoff_base_s": BACKOFF_BASE_S,
            "max_backoff_s": MAX_BACKOFF_S,
            "sleep": sleeps,
        }
        summarizer = OpenAIChatSummarizer(**{**options, **overrides})
        made.append(summarizer)
        return summarizer

    yield build
    for summarizer in made:
        await summarizer.aclose()


async def test_posts_the_rendered_prompt_and_returns_text_and_usage(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}
    chat_server.script(Reply(body=completion("The user planned the day.", usage)))

    result = await make().summarize(WINDOW)

    assert result == SummaryResult(
        text="The user planned the day.",
        usage=UsageMetadata(
            prompt_token_count=120, candidates_token_count=7, total_token_count=127
        ),
    )
    [request] = chat_server.received
    assert (request.method, request.path) == ("POST", CHAT_PATH)
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": build_prompt(render_transcript(WINDOW))}],
        "stream": False,
    }


async def test_a_trailing_slash_on_the_base_url_changes_nothing(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    await make(base_url=chat_server.base_url + "/").summarize(WINDOW)
    assert [r.path for r in chat_server.received] == [CHAT_PATH]


async def test_an_empty_key_sends_no_authorization_header(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    await make(api_key=SecretStr("")).summarize(WINDOW)
    assert "Authorization" not in chat_server.received[0].headers


async def test_an_empty_window_sends_nothing(chat_server: ChatServer, make: MakeSummarizer) -> None:
    assert await make().summarize([]) is None
    assert chat_server.received == []


@pytest.mark.parametrize("content", [None, "", "  \n"])
async def test_no_content_means_no_summary(
    chat_server: ChatServer, make: MakeSummarizer, content: str | None
) -> None:
    chat_server.script(Reply(body=completion(content, {"prompt_tokens": 3})))
    assert await make().summarize(WINDOW) is None


async def test_a_reply_without_usage_has_none(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(body=completion("s")))
    assert await make().summarize(WINDOW) == SummaryResult(text="s", usage=None)


async def test_429_waits_as_long_as_retry_after_says_within_the_bound(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(
        Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "7"}),
        Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "3600"}),
        Reply(body=completion("done")),
    )

    result = await make().summarize(WINDOW)

    assert result is not None
    assert result.text == "done"
    assert sleeps.delays == [7.0, MAX_BACKOFF_S]
    assert len(chat_server.received) == 3


async def test_5xx_backs_off_exponentially_then_succeeds(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(
        Reply(status=500, body="internal"),
        Reply(status=502, body="bad gateway"),
        Reply(body=completion("done")),
    )

    result = await make().summarize(WINDOW)

    assert result is not None
    assert result.text == "done"
    assert sleeps.delays == [BACKOFF_BASE_S, 2 * BACKOFF_BASE_S]
    assert len(chat_server.received) == 3


async def test_5xx_on_every_attempt_is_retriable_and_names_the_status(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(*[Reply(status=503, body="model overloaded")] * 3)

    with pytest.raises(SummarizerUnavailableError) as caught:
        await make(max_retries=2).summarize(WINDOW)

    error = caught.value
    assert error.retriable is True
    assert (error.status, error.attempts) == (503, 3)
    assert "HTTP 503" in str(error)
    assert "model overloaded" in str(error)
    assert len(chat_server.received) == 3
    assert sleeps.delays == [BACKOFF_BASE_S, 2 * BACKOFF_BASE_S]


async def test_the_backoff_is_bounded(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(*[Reply(status=500)] * 6)
    with pytest.raises(SummarizerUnavailableError):
        await make(max_retries=5, backoff_base_s=2.0).summarize(WINDOW)
    assert sleeps.delays == [2.0, 4.0, 8.0, MAX_BACKOFF_S, MAX_BACKOFF_S]


async def test_400_is_rejected_at_once_with_the_body(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(
        Reply(status=400, body={"error": {"message": "model 'x' does not exist"}}),
    )

    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)

    error = caught.value
    assert error.retriable is False
    assert (error.status, error.attempts) == (400, 1)
    assert "HTTP 400" in str(error)
    assert "model 'x' does not exist" in str(error)
    assert len(chat_server.received) == 1
    assert sleeps.delays == []


async def test_the_api_key_never_appears_in_an_error(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(status=401, body=f"invalid key {API_KEY} in Authorization"))

    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)

    assert API_KEY not in str(caught.value)
    assert API_KEY not in caught.value.excerpt
    assert "invalid key <redacted>" in str(caught.value)


async def test_a_long_error_body_is_cut_to_an_excerpt(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(status=422, body="x" * 5000))
    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)
    assert caught.value.excerpt == "x" * EXCERPT_CHARS + "..."
    assert len(str(caught.value)) < EXCERPT_CHARS + 100


async def test_a_body_that_is_not_json_is_rejected(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(Reply(status=200, body="<html>gateway</html>"))

    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)

    assert caught.value.retriable is False
    assert caught.value.status == 200
    assert "not a chat completion" in str(caught.value)
    assert "<html>gateway</html>" in str(caught.value)
    assert sleeps.delays == []


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"object": "chat.completion"},
        {"choices": [{"message": {"content": ["part"]}}]},
        {"choices": ["text"]},
    ],
    ids=["no-choices", "no-choices-key", "content-not-text", "choice-not-object"],
)
async def test_json_that_is_not_a_completion_is_rejected(
    chat_server: ChatServer, make: MakeSummarizer, body: dict[str, Any]
) -> None:
    chat_server.script(Reply(body=body))
    with pytest.raises(SummarizerRejectedError, match="not a chat completion"):
        await make().summarize(WINDOW)


async def test_a_slow_reply_times_out_and_is_retried(
    chat_server: ChatServer, make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    chat_server.script(*[Reply(body=completion("late"), delay_s=SLOW_REPLY_S)] * 2)

    with pytest.raises(SummarizerUnavailableError) as caught:
        await make(timeout_s=TIMEOUT_S, max_retries=1).summarize(WINDOW)

    error = caught.value
    assert error.retriable is True
    assert error.status is None
    assert error.attempts == 2
    assert f"timed out after {TIMEOUT_S}s" in str(error)
    assert isinstance(error.__cause__, httpx.TimeoutException)
    assert len(chat_server.received) == 2
    assert sleeps.delays == [BACKOFF_BASE_S]


async def test_a_timeout_then_a_reply_succeeds(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(
        Reply(body=completion("late"), delay_s=SLOW_REPLY_S), Reply(body=completion("on time"))
    )
    result = await make(timeout_s=TIMEOUT_S).summarize(WINDOW)
    assert result is not None
    assert result.text == "on time"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_endpoint_is_retriable(
    make: MakeSummarizer, sleeps: SleepRecorder
) -> None:
    summarizer = make(base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=1)
    with pytest.raises(SummarizerUnavailableError, match="unreachable") as caught:
        await summarizer.summarize(WINDOW)
    assert caught.value.status is None
    assert sleeps.delays == [BACKOFF_BASE_S]


async def test_a_shared_client_is_left_open(chat_server: ChatServer, sleeps: SleepRecorder) -> None:
    async with httpx.AsyncClient() as client:
        async with OpenAIChatSummarizer(
            base_url=chat_server.base_url,
            model=MODEL,
            api_key=SecretStr(API_KEY),
            client=client,
            sleep=sleeps,
        ) as summarizer:
            assert await summarizer.summarize(WINDOW) is not None
        assert not client.is_closed
        response = await client.get(chat_server.base_url + "/models")
        assert response.status_code == 404


def test_negative_retries_are_refused() -> None:
    with pytest.raises(ValueError, match="max_retries=-1"):
        OpenAIChatSummarizer(
            base_url="http://127.0.0.1:1", model="m", api_key=SecretStr(""), max_retries=-1
        )
