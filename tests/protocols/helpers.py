"""A treechat set up like the Pi of the recordings: a provider `fake` at the loopback fake, with
`fake/fake-model` (and `fake/other-model`), in a throw-away home and working folder."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.config.settings import Settings, load_settings
from treechat.llm.registry import ModelRegistry
from treechat.llm.retry import RetryPolicy
from treechat.protocols.framing import MAX_LINE_BYTES
from treechat.protocols.rpc.approvals import install
from treechat.protocols.rpc.server import RpcServer
from treechat.storage.base import SessionCatalog

from .conversations import HELLO
from .driver import Driver, ProcessChannel, ServerChannel

TREECHAT = str(Path(sys.executable).with_name("treechat"))


async def instant(seconds: float) -> None:
    """A retry's wait, without the waiting (in-process runs)."""
    await asyncio.sleep(0)


def write_config(home: Path, fp: FakeProvider, *, api: Literal["openai", "anthropic"] = "openai",
                 reasoning: bool = False, extra: str = "") -> None:
    """`extra`: more top-level keys of config.toml (before the tables)."""
    url = fp.base_url + ("/v1" if api == "openai" else "")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'{extra}\n[providers.fake]\napi = "{api}"\nbase_url = "{url}"\napi_key = "sk-fake"\n'
        f'[[providers.fake.models]]\nid = "fake-model"\nreasoning = {str(reasoning).lower()}\n'
        f'[[providers.fake.models]]\nid = "other-model"\n', encoding="utf-8")


@dataclass
class Place:
    """A home with the config, and a working folder holding hello.txt."""

    home: Path
    work: Path
    fp: FakeProvider

    @classmethod
    def make(cls, tmp_path: Path, fp: FakeProvider, **config: Any) -> Place:
        home, work = tmp_path / "home", tmp_path / "work"
        write_config(home, fp, **config)
        work.mkdir(exist_ok=True)
        (work / "hello.txt").write_text(HELLO, encoding="utf-8")
        return cls(home, work, fp)

    def settings(self) -> Settings:
        return load_settings(self.home, env={})

    def chat(self, catalog: SessionCatalog, *, model: str | None = "fake/fake-model", tools: tuple[str, ...] = (),
             sleep: Callable[[float], Awaitable[None]] = instant) -> Chat:
        """`sleep`: a retry's wait (by default none)."""
        settings = self.settings()
        return Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env={}), model_ref=model,
                    tools=list(tools), cwd=str(self.work), local_servers=(),
                    stream_options={"retry": RetryPolicy(sleep=sleep)})

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.update(TREECHAT_HOME=str(self.home))
        return env


async def in_process(place: Place, catalog: SessionCatalog, *, yes: bool = False, approval_timeout: float = 30.0,
                     tools: tuple[str, ...] = (), line_limit: int = MAX_LINE_BYTES,
                     sleep: Callable[[float], Awaitable[None]] = instant) -> tuple[Driver, RpcServer]:
    """An RpcServer on a chat of `catalog` (a new session), driven in this process."""
    chat = place.chat(catalog, tools=tools, sleep=sleep)
    server = RpcServer(chat, approval_timeout=approval_timeout, line_limit=line_limit)
    install(chat, server.approvals, yes=yes)
    await chat.open(await catalog.create(cwd=str(place.work)))
    return Driver(ServerChannel(server)), server


async def child(place: Place, *args: str) -> tuple[Driver, ProcessChannel]:
    """`treechat --mode rpc` as its own process, on pipes."""
    channel = await ProcessChannel.start([TREECHAT, "--model", "fake/fake-model", "--mode", "rpc", *args],
                                         cwd=str(place.work), env=place.env())
    return Driver(channel), channel
