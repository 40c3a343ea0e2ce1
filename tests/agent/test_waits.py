"""Waits reach the agent's listeners (retry_wait / stream_wait), settings reach the stream, and
print mode's stderr notes (treechat.cli.wait_notes) read well on a terminal and in a log."""

from __future__ import annotations

import asyncio
import io

import pytest

from tests.fake_provider import FakeProvider
from treechat.agent import Agent, AgentState
from treechat.agent.events import RetryWait, StreamWait
from treechat.cli.wait_notes import WaitNotes, describe
from treechat.config.settings import load_settings
from treechat.llm.options import stream_options_from_settings
from treechat.llm.retry import RetryPolicy
from treechat.llm.types import ModelInfo

from .scripted import Recorder, ScriptedStream, reply


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


def agent_for(fp: FakeProvider, **options) -> Agent:
    model = ModelInfo(id="fake-model", provider="openai", api="openai", base_url=fp.base_url)
    return Agent(state=AgentState(model=model), stream_options=options)


async def test_a_retry_is_announced_before_the_reply(fake) -> None:
    fake.script_status(503, {"error": {"message": "busy \x1b[31mnow"}})
    fake.script_openai(["fine"])
    agent = agent_for(fake, retry=RetryPolicy(sleep=no_sleep))
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("hi")
    (wait,) = rec.named("retry_wait")
    assert isinstance(wait, RetryWait) and (wait.attempt, wait.max_attempts, wait.delay_s) == (1, 3, 1.0)
    assert "HTTP 503" in wait.reason and wait.provider == "openai" and wait.started_at > 0
    starts = [i for i, e in enumerate(rec.events) if e.type == "message_start" and e.message.role == "assistant"]
    assert rec.events.index(wait) < starts[0]
    assert agent.state.messages[-1].stop_reason == "stop"


async def test_a_silent_provider_is_announced_then_fails(fake) -> None:
    fake.script_hang()
    agent = agent_for(fake, first_byte_timeout=0.4, notice_after=0.1)
    rec = Recorder()
    agent.subscribe(rec)
    await agent.prompt("hi")
    (wait,) = rec.named("stream_wait")
    assert isinstance(wait, StreamWait) and wait.phase == "first_byte" and wait.limit_s == 0.4
    assert agent.state.messages[-1].stop_reason == "error"


async def test_other_wait_listeners_still_hear_of_waits(fake) -> None:
    fake.script_status(500, {"error": {"message": "boom"}})
    fake.script_openai(["ok"])
    heard = []
    agent = agent_for(fake, retry=RetryPolicy(sleep=no_sleep), on_wait=heard.append)
    await agent.prompt("hi")
    assert [n.kind for n in heard] == ["retry"]


async def test_settings_timeouts_reach_every_request(tmp_path) -> None:
    (tmp_path / "config.toml").write_text("connect_timeout = 3\nfirst_byte_timeout = 600\nidle_timeout = 45\n"
                                          "reply_timeout = 900\nmax_reply_mb = 2.5\n")
    options = stream_options_from_settings(load_settings(tmp_path, env={}))
    assert options == {"connect_timeout": 3.0, "first_byte_timeout": 600.0, "idle_timeout": 45.0,
                       "reply_timeout": 900.0, "max_reply_bytes": 2_500_000}
    stream = ScriptedStream(reply("ok"))
    await Agent(stream_fn=stream, stream_options=options).prompt("hi")
    sent = stream.options[0]
    assert (sent.connect_timeout, sent.first_byte_timeout, sent.idle_timeout) == (3.0, 600.0, 45.0)
    assert (sent.reply_timeout, sent.max_reply_bytes) == (900.0, 2_500_000)
    assert stream_options_from_settings(None) == {"connect_timeout": 10.0, "first_byte_timeout": 300.0,
                                                  "idle_timeout": 120.0, "reply_timeout": 3600.0,
                                                  "max_reply_bytes": 4_000_000}


# ---------------------------------------------------------------- print mode's notes


def retry_event(**kw) -> RetryWait:
    base = dict(attempt=1, max_attempts=3, delay_s=12.0, reason="openai is overloaded (HTTP 529)", provider="openai")
    return RetryWait(**{**base, **kw})


def test_a_log_gets_one_sanitised_line_per_wait() -> None:
    err = io.StringIO()
    notes = WaitNotes(err, live=False)
    notes(retry_event(reason="bad \x1b]52;c;ZXZpbA==\x07 news\x1b[2J", retry_after=True))
    notes(StreamWait(phase="idle", waited_s=5.0, limit_s=120.0, provider="ollama"))
    lines = err.getvalue().splitlines()
    assert lines == [
        "treechat: retrying in 12 s, as the server asked (retry 1 of 3): bad news",
        "treechat: nothing more from ollama for 5 s; giving up in 115 s (Ctrl+C stops)",
    ]
    assert "\x1b" not in err.getvalue()


async def test_a_terminal_gets_a_countdown_cleared_when_the_reply_comes() -> None:
    import time

    err = io.StringIO()
    notes = WaitNotes(err, live=True, tick=0.05)
    notes(retry_event(delay_s=0.2, started_at=time.monotonic()))
    await asyncio.sleep(0.12)
    notes(type("E", (), {"type": "message_start", "message": None})())
    shown = err.getvalue()
    frames = [f for f in shown.split("\r\x1b[2K") if f]
    assert len(frames) >= 2 and all(f.startswith("treechat: retrying in 1 s (retry 1 of 3)") for f in frames)
    assert shown.endswith("\r\x1b[2K") and "\n" not in shown  # one line, redrawn, then cleared


def test_describe_ignores_other_events() -> None:
    assert describe(type("E", (), {"type": "message_end"})()) is None
