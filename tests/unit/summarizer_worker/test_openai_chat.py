"""`OpenAIChatSummarizer` against a real local chat-completions server: one bounded attempt."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from projections.compaction.render import build_prompt, render_transcript
from schemas.event import UsageMetadata
from summarizer_worker.errors import SummarizerRejectedError, SummarizerUnavailableError
from summarizer_worker.openai_chat import EXCERPT_CHARS, OpenAIChatSummarizer, retry_after_s
from summarizer_worker.summarizers import SummaryResult
from tests.support.chat_server import CHAT_PATH, ChatServer, Reply, completion
from tests.support.events import call_event, text_event

API_KEY = "sk-test-0123456789abcdef"
MODEL = "summarizer-model"
MAX_TOKENS = 512
MAX_REPLY_BYTES = 8_192
SLOW_REPLY_S = 30.0  # far beyond the timeout; the server cuts it short on close
TIMEOUT_S = 0.2

WINDOW = [
    text_event("e1", "inv1", 100.0, "Plan my day"),
    call_event("e2", "inv1", 101.0, "c1", name="get_calendar"),
    text_event("e3", "inv1", 102.0, "You have a standup at 9.", author="planner"),
]


MakeSummarizer = Callable[..., OpenAIChatSummarizer]


@pytest.fixture
async def make(chat_server: ChatServer) -> AsyncIterator[MakeSummarizer]:
    """Builds summarizers on the local server; closes them all after the test."""
    made: list[OpenAIChatSummarizer] = []

    def build(**overrides: Any) -> OpenAIChatSummarizer:
        options: dict[str, Any] = {
            "base_url": chat_server.base_url,
            "model": MODEL,
            "api_key": SecretStr(API_KEY),
            "timeout_s": 5.0,
            "max_tokens": MAX_TOKENS,
            "max_reply_bytes": MAX_REPLY_BYTES,
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
    assert request.headers["Accept-Encoding"] == "identity"
    assert request.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": build_prompt(render_transcript(WINDOW))}],
        "stream": False,
        "max_tokens": MAX_TOKENS,
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


async def test_429_is_retriable_with_the_delay_retry_after_asks(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(
        Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "7"}),
    )

    with pytest.raises(SummarizerUnavailableError) as caught:
        await make().summarize(WINDOW)

    assert caught.value.retriable is True
    assert (caught.value.status, caught.value.retry_after_s) == (429, 7.0)
    assert len(chat_server.received) == 1  # the pipeline retries, not the backend


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (b"12", 12.0),
        (b"\xb2", None),  # latin-1 superscript two: isdigit() but not float() (review L2)
        ("\u0663".encode(), None),  # Arabic-Indic three
        (b"Wed, 21 Oct 2015 07:28:00 GMT", None),
        (b"-3", None),
        (b"", None),
    ],
)
def test_retry_after_is_ascii_seconds_or_nothing_and_never_raises(
    header: bytes, seconds: float | None
) -> None:
    response = httpx.Response(429, headers=[(b"retry-after", header)])
    assert retry_after_s(response) == seconds


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retriable_and_one_call_is_one_attempt(
    chat_server: ChatServer, make: MakeSummarizer, status: int
) -> None:
    chat_server.script(Reply(status=status, body="model overloaded"), Reply(body=completion("ok")))
    summarizer = make()

    with pytest.raises(SummarizerUnavailableError) as caught:
        await summarizer.summarize(WINDOW)

    error = caught.value
    assert error.retriable is True
    assert error.status == status
    assert f"HTTP {status}" in str(error)
    assert "model overloaded" in str(error)
    assert len(chat_server.received) == 1
    result = await summarizer.summarize(WINDOW)  # the next call is the retry
    assert result is not None
    assert result.text == "ok"
    assert len(chat_server.received) == 2


async def test_400_is_rejected_at_once_with_the_body(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(
        Reply(status=400, body={"error": {"message": "model 'x' does not exist"}}),
    )

    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)

    error = caught.value
    assert error.retriable is False
    assert error.status == 400
    assert "HTTP 400" in str(error)
    assert "model 'x' does not exist" in str(error)
    assert len(chat_server.received) == 1


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
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(status=200, body="<html>gateway</html>"))

    with pytest.raises(SummarizerRejectedError) as caught:
        await make().summarize(WINDOW)

    assert caught.value.retriable is False
    assert caught.value.status == 200
    assert "not a chat completion" in str(caught.value)
    assert "<html>gateway</html>" in str(caught.value)


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


async def test_a_slow_reply_times_out_and_is_retriable(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(body=completion("late"), delay_s=SLOW_REPLY_S))

    with pytest.raises(SummarizerUnavailableError) as caught:
        await make(timeout_s=TIMEOUT_S).summarize(WINDOW)

    error = caught.value
    assert error.retriable is True
    assert error.status is None
    assert f"timed out after {TIMEOUT_S}s" in str(error)
    assert len(chat_server.received) == 1


async def test_a_timeout_then_a_reply_in_time_succeeds(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(
        Reply(body=completion("late"), delay_s=SLOW_REPLY_S), Reply(body=completion("on time"))
    )
    summarizer = make(timeout_s=TIMEOUT_S)
    with pytest.raises(SummarizerUnavailableError):
        await summarizer.summarize(WINDOW)
    result = await summarizer.summarize(WINDOW)
    assert result is not None
    assert result.text == "on time"


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_endpoint_is_retriable(make: MakeSummarizer) -> None:
    summarizer = make(base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    with pytest.raises(SummarizerUnavailableError, match="unreachable") as caught:
        await summarizer.summarize(WINDOW)
    assert caught.value.status is None


async def test_a_shared_client_is_left_open(chat_server: ChatServer) -> None:
    async with httpx.AsyncClient() as client:
        async with OpenAIChatSummarizer(
            base_url=chat_server.base_url,
            model=MODEL,
            api_key=SecretStr(API_KEY),
            client=client,
        ) as summarizer:
            assert await summarizer.summarize(WINDOW) is not None
        assert not client.is_closed
        response = await client.get(chat_server.base_url + "/models")
        assert response.status_code == 404


async def test_a_reply_over_the_byte_limit_is_rejected_without_reading_it_all(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(body=completion("x" * (MAX_REPLY_BYTES * 4))))
    with pytest.raises(SummarizerRejectedError, match=f"reply over {MAX_REPLY_BYTES} bytes"):
        await make().summarize(WINDOW)


async def test_a_reply_just_under_the_byte_limit_is_read(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(body=completion("y" * (MAX_REPLY_BYTES - 500))))
    result = await make().summarize(WINDOW)
    assert result is not None
    assert len(result.text) == MAX_REPLY_BYTES - 500


async def test_an_error_reply_over_the_byte_limit_is_rejected_too(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(status=503, body="z" * (MAX_REPLY_BYTES * 2)))
    with pytest.raises(SummarizerRejectedError, match="reply over"):
        await make().summarize(WINDOW)


async def test_a_reply_nested_beyond_the_parsers_depth_is_rejected(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(Reply(body="[" * 2000 + "]" * 2000))
    with pytest.raises(SummarizerRejectedError, match="not a chat completion"):
        await make().summarize(WINDOW)


async def test_token_counts_beyond_64_bits_are_left_out(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    chat_server.script(
        Reply(body=completion("s", {"prompt_tokens": 2**64, "completion_tokens": 3}))
    )
    result = await make().summarize(WINDOW)
    assert result is not None
    assert result.usage == UsageMetadata(candidates_token_count=3)


async def test_token_counts_beyond_what_an_event_holds_are_left_out(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    usage = {"prompt_tokens": 2**31, "completion_tokens": 2**31 - 1, "total_tokens": 2**40}
    chat_server.script(Reply(body=completion("s", usage)))
    result = await make().summarize(WINDOW)
    assert result == SummaryResult(text="s", usage=UsageMetadata(candidates_token_count=2**31 - 1))


async def test_a_prompt_over_its_bound_is_cut_and_says_so(
    chat_server: ChatServer, make: MakeSummarizer
) -> None:
    window = [
        text_event(f"e{n}", f"inv{n}", 100.0 + n, f"message {n} " + "w" * 1000) for n in range(50)
    ]
    await make(max_prompt_chars=8_000).summarize(window)
    [request] = chat_server.received
    prompt = request.body["messages"][0]["content"]
    assert len(prompt) <= 8_000
    assert "events left out]" in prompt
    assert "message 49 " in prompt  # the newest events are kept
    assert "message 0 " not in prompt


async def test_proxy_variables_of_the_environment_are_not_followed(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_proxy = f"http://127.0.0.1:{_closed_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with OpenAIChatSummarizer(
        base_url=chat_server.base_url, model=MODEL, api_key=SecretStr(API_KEY)
    ) as summarizer:
        assert await summarizer.summarize(WINDOW) is not None
    assert len(chat_server.received) == 1


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://api.example.com/v1", "http sends the API key in clear text"),
        ("https://user:secret@api.example.com/v1", "user name or password"),
        ("https://api.example.com/v1?key=k", "no query or fragment"),
        ("ftp://127.0.0.1/v1", "scheme must be https"),
    ],
)
def test_an_endpoint_the_key_is_not_safe_with_is_refused(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as caught:
        OpenAIChatSummarizer(base_url=url, model="m", api_key=SecretStr(""))
    assert "secret" not in str(caught.value)


def test_a_prompt_bound_below_the_template_is_refused() -> None:
    with pytest.raises(ValueError, match="max_prompt_chars=600"):
        OpenAIChatSummarizer(
            base_url="http://127.0.0.1:1", model="m", api_key=SecretStr(""), max_prompt_chars=600
        )
