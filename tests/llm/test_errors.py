"""HTTP failures before the stream: classification and the single retry layer (fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

from treechat.llm.errors import ProviderError, classify_http_error, is_context_overflow, parse_retry_after
from treechat.llm.registry import adapter
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import LlmContext, StreamOptions
from treechat.storage.model import TextContent, UserMessage

from .conftest import model_for


class FakeClock:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


async def run(fp, api, *, clock=None, retries=3, retry_events=None, model_id="fake-model"):
    model = model_for(fp, api, id=model_id)
    policy = RetryPolicy(max_retries=retries, base_delay=1.0, sleep=(clock or FakeClock()).sleep)
    opts = StreamOptions(retry=policy, on_retry=(lambda a, d, m: retry_events.append((a, d))) if retry_events is not None else None)
    events = [e async for e in adapter(api)(model, LlmContext("", [UserMessage(content="hi")]), opts, None)]
    return events[-1].partial


def script_ok(fp, api):
    {"openai": fp.script_openai, "anthropic": fp.script_anthropic, "openai-responses": fp.script_responses}[api](["fine"])


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_429_with_retry_after_then_success(fake, api) -> None:
    clock = FakeClock()
    retried: list[Any] = []
    fake.script_status(429, {"error": {"message": "slow down", "type": "rate_limit_error"}}, {"Retry-After": "1"})
    script_ok(fake, api)
    final = await run(fake, api, clock=clock, retry_events=retried)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="fine")]
    assert len(fake.requests) == 2 and clock.slept == [1.0] and retried == [(1, 1.0)]


async def test_quota_429_is_not_retried(fake) -> None:
    fake.script_status(429, {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}})
    final = await run(fake, "openai")
    assert final.stop_reason == "error" and "quota" in final.error_message and "billing" in final.error_message
    assert len(fake.requests) == 1


@pytest.mark.parametrize("api,status,body", [
    ("anthropic", 529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ("openai", 503, {"error": {"message": "Service Unavailable"}}),
    ("openai-responses", 500, {"error": {"message": "The server had an error", "type": "server_error"}}),
])
async def test_overloaded_backs_off_exponentially_then_succeeds(fake, api, status, body) -> None:
    clock = FakeClock()
    for _ in range(2):
        fake.script_status(status, body)
    script_ok(fake, api)
    final = await run(fake, api, clock=clock)
    assert final.stop_reason == "stop" and clock.slept == [1.0, 2.0]


async def test_gives_up_after_max_retries(fake) -> None:
    for _ in range(3):
        fake.script_status(500, {"error": {"message": "boom"}})
    final = await run(fake, "openai", retries=2)
    assert final.stop_reason == "error" and "HTTP 500" in final.error_message
    assert len(fake.requests) == 3


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_401_names_the_fix_and_is_not_retried(fake, api) -> None:
    fake.script_status(401, {"error": {"message": "invalid x-api-key", "type": "authentication_error"}})
    final = await run(fake, api)
    assert final.stop_reason == "error" and "API key" in final.error_message
    assert final.error_kind == "auth" and len(fake.requests) == 1


async def test_404_suggests_checking_the_model(fake) -> None:
    fake.script_status(404, {"error": {"message": "model 'nope' not found"}})
    final = await run(fake, "openai", model_id="nope")
    assert "openai/nope was not found" in final.error_message and len(fake.requests) == 1


@pytest.mark.parametrize("api,text", [
    ("anthropic", "prompt is too long: 213462 tokens > 200000 maximum"),
    ("openai", "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens"),
])
async def test_context_overflow_is_classified_and_not_retried(fake, api, text) -> None:
    fake.script_status(400, {"error": {"message": text, "type": "invalid_request_error"}})
    final = await run(fake, api)
    assert final.error_kind == "overflow" and is_context_overflow(final.error_message)
    assert len(fake.requests) == 1


def test_overflow_patterns_exclude_rate_limits() -> None:
    assert is_context_overflow("the request exceeds the available context size")
    assert is_context_overflow("400 (no body)")
    assert not is_context_overflow("Rate limit reached: too many tokens per minute")


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None


def test_too_long_retry_after_fails_at_once() -> None:
    err = classify_http_error(429, {"retry-after": "18000"}, "{}", provider="p", model="m")
    assert isinstance(err, ProviderError) and RetryPolicy().delay_for(1, err) is None


async def test_connection_refused_is_a_clear_error(fake) -> None:
    model = model_for(fake, "openai")
    model = type(model)(**{**model.__dict__, "base_url": "http://127.0.0.1:9"})
    opts = StreamOptions(retry=RetryPolicy(max_retries=0))
    final = [e async for e in adapter("openai")(model, LlmContext("", [UserMessage(content="x")]), opts, None)][-1].partial
    assert final.stop_reason == "error" and "Could not reach openai at http://127.0.0.1:9" in str(final.error_message)
