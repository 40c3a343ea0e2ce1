"""Provider faults from issue 15, each against a loopback server: proxies, secrets, bounded and
visible waits, non-SSE answers, huge events. Every wait here is sub-second, so the suite stays fast."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.fake_provider import (
    SSE_HEADERS,
    FakeProvider,
    FakeProxy,
    Send,
    Status,
    anthropic_events,
    openai_chunks,
    sse_frame,
)
from tests.narrow import assistant_of
from tests.print_helper import print_run
from treechat.config.settings import load_settings
from treechat.llm.proxy import is_local_host, route_for
from treechat.llm.registry import ModelRegistry, adapter
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import Api, LlmContext, ModelInfo, StreamOptions, WaitNotice
from treechat.session.session import Session
from treechat.storage.memory import MemoryCatalog
from treechat.storage.model import TextContent, UserMessage

KEY = "sk-proj-faultSuiteKey0123456789abcdef"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
              "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.fixture
async def proxy():
    async with FakeProxy() as px:
        yield px


def model(base_url: str, api: Api = "openai", **kw) -> ModelInfo:
    return ModelInfo(id="fake-model", provider=api, api=api, base_url=base_url, **kw)


async def stream(base_url: str, api: Api = "openai", notices: list[WaitNotice] | None = None, **opts):
    fn = adapter(api)
    options = StreamOptions(api_key=KEY, on_wait=notices.append if notices is not None else None, **opts)
    events = [e async for e in fn(model(base_url, api), LlmContext("", [UserMessage(content="hi")]), options, None)]
    return events[-1].partial


# ---------------------------------------------------------------- 4. secrets stay home


@pytest.mark.parametrize("var", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
async def test_loopback_provider_never_goes_through_the_proxy(fake, proxy, monkeypatch, var) -> None:
    monkeypatch.setenv(var, proxy.url)
    fake.script_openai(["direct"])
    final = await stream(fake.base_url)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="direct")]
    assert proxy.requests == [] and fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_localhost_name_bypasses_the_proxy_too(fake, proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    fake.script_openai(["ok"])
    final = await stream(f"http://localhost:{fake.port}")
    assert final.stop_reason == "stop" and proxy.requests == []


def test_what_counts_as_local() -> None:
    for host in ("127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST.", "app.localhost",
                 "::ffff:127.0.0.1", "169.254.1.2", "fe80::1%eth0", "0.0.0.0"):
        assert is_local_host(host), host
    for host in ("api.openai.com", "10.0.0.5", "192.168.1.10", "8.8.8.8", "localhost.example.com"):
        assert not is_local_host(host), host


def test_remote_hosts_keep_the_environment_proxy_unless_local_or_no_proxy(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "internal.corp")
    route = route_for("https://api.openai.com/v1/chat/completions")
    assert (route.proxy, route.source, route.shown) == ("http://user:pw@proxy.corp:3128", "HTTPS_PROXY",
                                                        "http://proxy.corp:3128")
    assert route_for("https://llm.internal.corp/v1").proxy is None
    assert route_for("https://gpu-box.lan:8000/v1", local=True).proxy is None  # a provider marked local
    assert route_for("http://127.0.0.1:11434/v1").proxy is None


def test_registry_marks_models_of_local_providers() -> None:
    registry = ModelRegistry(env={})
    assert registry.resolve("ollama/qwen3:8b").local is True
    assert registry.resolve("openai/gpt-4.1-mini").local is False


async def test_remote_provider_still_uses_the_proxy(proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    proxy.script_openai(["via proxy"])  # the proxy stands in for the origin; nothing leaves the machine
    final = await stream("http://provider.invalid/v1")
    assert final.stop_reason == "stop" and final.content == [TextContent(text="via proxy")]
    assert proxy.requests[0].path == "http://provider.invalid/v1/chat/completions"


async def test_a_proxy_502_is_reported_as_the_proxy_s(proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://alice:hunter2pw@"))
    final = await stream("http://provider.invalid/v1", retry=RetryPolicy(max_retries=0))
    assert final.stop_reason == "error"
    assert f"HTTP 502 from the proxy {proxy.url}" in final.error_message and "NO_PROXY" in final.error_message
    assert "had a server error" not in final.error_message and "hunter2pw" not in final.error_message


async def test_a_refused_tunnel_is_reported_as_the_proxy_s(proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    final = await stream("https://provider.invalid/v1", retry=RetryPolicy(max_retries=0))
    assert proxy.requests[0].method == "CONNECT" and proxy.requests[0].path == "provider.invalid:443"
    assert final.stop_reason == "error" and f"through the proxy {proxy.url}" in final.error_message


async def test_an_unreachable_proxy_is_named(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    final = await stream("https://provider.invalid/v1", retry=RetryPolicy(max_retries=0))
    assert final.stop_reason == "error" and "through the proxy http://127.0.0.1:9" in final.error_message


def echo_auth(request) -> bytes:
    shown = request.headers.get("authorization") or request.headers.get("x-api-key")
    return f'{{"error": {{"message": "Invalid key: {shown} (header was {shown!r})"}}}}'.encode()


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_a_key_echoed_in_a_401_body_is_redacted(fake, api) -> None:
    fake.enqueue([Status(401, {"Content-Type": "application/json"}, "close"), Send(echo_auth)])
    final = await stream(fake.base_url, api)
    assert final.stop_reason == "error" and "rejected the API key" in final.error_message
    assert KEY not in final.error_message and "[redacted]" in final.error_message


async def test_a_key_echoed_mid_stream_is_redacted(fake) -> None:
    fake.script_openai(chunks=[{"error": {"message": f"upstream refused Bearer {KEY}"}}])
    final = await stream(fake.base_url)
    assert final.stop_reason == "error" and KEY not in final.error_message


async def test_print_mode_neither_prints_nor_stores_an_echoed_key(fake, tmp_path) -> None:
    fake.enqueue([Status(401, {"Content-Type": "application/json"}, "close"), Send(echo_auth)])
    session = await Session.open(await MemoryCatalog().create())
    registry = ModelRegistry(env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY})
    code, _, err, session = await print_run("hi", session, model_ref="openai/fake-model", registry=registry,
                                            settings=load_settings(tmp_path, env={}))
    assert code == 1 and "rejected the API key" in err and KEY not in err
    stored = (await session.build_session_context()).messages[-1]
    assert assistant_of(stored).stop_reason == "error" and KEY not in (assistant_of(stored).error_message or "")


# ---------------------------------------------------------------- 5. bounded waits, visibly


async def test_a_server_that_never_answers_fails_at_first_byte_timeout_once(fake) -> None:
    fake.script_hang()
    fake.script_openai(["never asked for"])
    notices: list[WaitNotice] = []
    start = time.monotonic()
    final = await stream(fake.base_url, notices=notices, first_byte_timeout=0.4, notice_after=0.1)
    assert final.stop_reason == "error" and "sent no reply within 0.4 s" in final.error_message
    assert final.error_kind == "timeout" and len(fake.requests) == 1  # not retried: it took its whole bound
    assert [(n.kind, n.seconds) for n in notices] == [("first_byte", 0.4)] and notices[0].waited >= 0.1
    assert time.monotonic() - start < 5  # a bound, not a benchmark: before, this took 4 × 300 s


@pytest.mark.parametrize("api", ["openai", "anthropic", "openai-responses"])
async def test_comments_or_pings_forever_do_not_keep_a_request_alive(fake, api) -> None:
    if api == "openai":
        fake.script_openai(["x"], drip_after=0)  # headers, then `: ping` comments only
    elif api == "openai-responses":  # its lifecycle events carry no token either
        fake.script_responses(["x"], drip_after=2)
    else:
        fake.script_anthropic(["x"], drip_after=1, drip=sse_frame({"type": "ping"}, "ping"))
    final = await stream(fake.base_url, api, first_byte_timeout=0.4, idle_timeout=5)
    assert final.stop_reason == "error" and "sent no reply within 0.4 s" in final.error_message
    await asyncio.wait_for(fake.client_disconnected.wait(), 5)  # and the connection was closed


async def test_a_stall_mid_reply_fails_at_idle_timeout_and_keeps_the_text(fake) -> None:
    fake.script_openai(["a", "b"], drip_after=1)
    notices: list[WaitNotice] = []
    final = await stream(fake.base_url, notices=notices, first_byte_timeout=5, idle_timeout=0.4, notice_after=0.1)
    assert final.stop_reason == "error" and "stopped sending for 0.4 s" in final.error_message
    assert final.content == [TextContent(text="a")]
    assert [n.kind for n in notices] == ["idle"]


async def test_a_stall_after_headers_is_bounded_by_first_byte_timeout(fake) -> None:
    fake.script_openai(["a"], hang_after=0)
    final = await stream(fake.base_url, first_byte_timeout=0.3, idle_timeout=5)
    assert final.stop_reason == "error" and "sent no reply within 0.3 s" in final.error_message


@pytest.mark.slow  # a reply paced over time
async def test_a_slow_but_steady_reply_is_not_cut(fake) -> None:
    fake.script_openai(["t"] * 8, gap=0.1)  # 0.8 s in all, never silent for 0.4 s
    final = await stream(fake.base_url, first_byte_timeout=0.4, idle_timeout=0.4)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="t" * 8)]


class FakeClock:
    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


async def test_retry_after_waits_are_capped_and_announced(fake) -> None:
    for _ in range(3):
        fake.script_status(429, {"error": {"message": "slow down"}}, {"Retry-After": "30"})
    clock = FakeClock()
    notices: list[Any] = []
    final = await stream(fake.base_url, notices=notices, retry=RetryPolicy(sleep=clock.sleep))
    assert final.stop_reason == "error" and "rate limiting" in final.error_message
    assert clock.slept == [30.0, 30.0] and len(fake.requests) == 3  # 60 s of waiting at most, then give up
    assert [(n.kind, n.attempt, n.seconds, n.retry_after) for n in notices] == [
        ("retry", 1, 30.0, True), ("retry", 2, 30.0, True)]
    assert "slow down" in notices[0].reason


async def test_a_retry_after_beyond_the_cap_fails_at_once_saying_so(fake) -> None:
    fake.script_status(503, {"error": {"message": "maintenance"}}, {"Retry-After": "45"})
    clock = FakeClock()
    final = await stream(fake.base_url, retry=RetryPolicy(sleep=clock.sleep))
    assert clock.slept == [] and len(fake.requests) == 1
    assert "asks to wait 45 s" in final.error_message


# ---------------------------------------------------------------- 8. linear SSE decoding


async def test_a_multi_megabyte_event_in_small_chunks(fake) -> None:
    text = "0123456789abcdef" * (3 * 65536)  # 3 MB in one delta
    wire = sse_frame({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
    steps: list[object] = [Status(200, SSE_HEADERS)] + [Send(wire[i:i + 1024]) for i in range(0, len(wire), 1024)]
    steps += [Send(sse_frame(c)) for c in openai_chunks()]
    fake.enqueue(steps)
    final = await stream(fake.base_url)
    assert final.stop_reason == "stop" and final.content[0].text == text


# ---------------------------------------------------------------- 10. not an event stream


@pytest.mark.parametrize("ctype,body,shown", [
    ("text/html; charset=utf-8", "<!doctype html><html><body>Welcome to nginx</body></html>", "got text/html"),
    ("application/json", '{"object": "list", "data": []}', "got application/json"),
    ("", "<html>login</html>", "got no content type"),
])
async def test_a_200_that_is_not_sse_says_check_the_base_url(fake, ctype, body, shown) -> None:
    headers = {"Content-Type": ctype} if ctype else {}
    fake.enqueue([Status(200, headers, "close"), Send(body.encode())])
    final = await stream(fake.base_url)
    assert final.stop_reason == "error" and "not an event stream" in final.error_message
    assert shown in final.error_message and "check the base URL" in final.error_message
    assert "end marker" not in final.error_message


async def test_sse_without_its_content_type_still_streams(fake) -> None:
    frames = [sse_frame(c) for c in openai_chunks(["plain"])]
    fake.enqueue([Status(200, {"Content-Type": "text/plain"}), *[Send(f) for f in frames]])
    final = await stream(fake.base_url)
    assert final.stop_reason == "stop" and final.content == [TextContent(text="plain")]


async def test_anthropic_stream_passes_the_content_type_check(fake) -> None:
    fake.script_anthropic(events=anthropic_events(["ok"]))
    final = await stream(fake.base_url, "anthropic")
    assert final.stop_reason == "stop"


async def test_a_provider_error_passed_along_by_a_proxy_stays_the_provider_s(proxy, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    proxy.script_status(503, {"error": {"message": "The engine is currently overloaded", "type": "server_error"}})
    final = await stream("http://provider.invalid/v1", retry=RetryPolicy(max_retries=0))
    assert final.error_message.startswith("openai had a server error (HTTP 503)")  # classified as the provider's
    # ... and the proxy named, since the answer could be its own (a user audit blamed the provider for one)
    assert final.error_message.endswith(f"(The request went through the proxy {proxy.url}, from HTTP_PROXY.)")
