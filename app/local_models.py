"""Local servers for one chat: which ones answer, and what they say about the models they run.

The same detection serves the app (at start-up and whenever the model picker opens), `-p` (when
no model is chosen) and `doctor`: the usual ports and every provider config.toml puts on this
machine (`treechat.llm.detect.servers_to_probe`), and, asked at the same time, the servers named
by their URL (OPENAI_BASE_URL at a llama.cpp or vLLM server, here or remote), whose models are what
they list (`treechat.llm.detect.ask_url_servers`); those come first: the person named them.

A model's window is never waited for between Enter and the request (issue 27): what is known is
used at once (the server's answer if it came, else a window an overflow taught us before, kept
in state.json, else the catalog's conservative guess shown as "ctx ?"), and the server is asked
in the background from start-up, each question bounded in bytes and time; when it answers, the
chat refines the model it is using (`on_refined`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from treechat.config.settings import Settings
from treechat.config.state import StateFile
from treechat.llm.detect import (
    DETECT_TIMEOUT,
    PROBE_TIMEOUT,
    DetectedServer,
    ServerModelInfo,
    Unanswered,
    UrlServer,
    ask_url_servers,
    detect_local_servers,
    detect_model_info,
    refine,
    root_of,
    servers_to_probe,
)
from treechat.llm.local import is_local_url
from treechat.llm.proxy import ssl_context
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import ModelInfo

Key = tuple[str, str]  # (base_url, model id)


def key_of(model: ModelInfo) -> Key:
    return (model.base_url.rstrip("/"), model.id)


class LocalModels:
    def __init__(self, registry: ModelRegistry, settings: Settings, *,
                 servers: Sequence[tuple[str, str]] | None = None,
                 on_refined: Callable[[Key, ServerModelInfo], None] | None = None) -> None:
        self.registry = registry
        self.state = StateFile(settings.home)
        self.named: tuple[UrlServer, ...] = tuple(registry.url_servers())
        by_url = {s.provider for s in self.named}
        configured = [(name, info.base_url) for name in sorted(settings.providers)
                      if name not in by_url and (info := registry.provider(name)) is not None]
        self.servers = tuple(servers) if servers is not None else servers_to_probe(configured, self.named)
        self.on_refined = on_refined
        self.detected: list[DetectedServer] = []
        self.unanswered: list[Unanswered] = []  # servers named by their URL that did not list their models
        self._detecting: asyncio.Task[list[DetectedServer]] | None = None
        self._facts: dict[Key, ServerModelInfo | None] = {}
        self._probes: dict[Key, asyncio.Task[None]] = {}
        self._remembered: set[Key] = set()  # windows known from state.json, not from the server
        self._windows: dict[Key, int | None] = {}  # what state.json says, as read

    # ------------------------------------------------------------ which servers answer

    def detect(self, busy: str | None = None) -> asyncio.Task[list[DetectedServer]]:
        """Ask the servers again (in the background); the task ends within DETECT_TIMEOUT. The
        server at `busy` (a root URL answering a reply now) is not asked: llama-cpp-python stops a
        reply when another request reaches it, and what it runs is known already."""
        if self._detecting is None or self._detecting.done():
            asked = tuple(s for s in self.servers if s[1].rstrip("/") != busy)
            named = tuple(s for s in self.named if root_of(s.base_url) != busy)
            kept = [s for s in self.detected if root_of(s.base_url) == busy]
            self._detecting = asyncio.ensure_future(self._detect(asked, named, kept))
        return self._detecting

    async def _detect(self, asked: tuple[tuple[str, str], ...], named: tuple[UrlServer, ...],
                      kept: list[DetectedServer]) -> list[DetectedServer]:
        if named:
            await asyncio.to_thread(ssl_context)  # a remote server's TLS: built off the event loop
        local, answers = await asyncio.gather(
            detect_local_servers(asked, timeout=DETECT_TIMEOUT),
            ask_url_servers(named, local_timeout=DETECT_TIMEOUT))
        self.unanswered = [a for a in answers if isinstance(a, Unanswered)]
        by_url = [a for a in answers if isinstance(a, DetectedServer)]
        return [*(s for s in kept if s.by_url), *by_url, *(s for s in kept if not s.by_url), *local]

    async def found(self, busy: str | None = None) -> list[DetectedServer]:
        """The servers answering now: the running detection, or a new one, waited for."""
        if not self.servers and not self.named:
            return list(self.detected)
        try:
            return await asyncio.shield(self.detect(busy))
        except Exception:  # noqa: BLE001  a bug in a probe must not stop a send
            return list(self.detected)

    def add(self, found: Sequence[DetectedServer]) -> None:
        """Offer what the servers run as models; a local server is used when nothing else is chosen."""
        from treechat.llm.catalog import ProviderInfo

        for server in found:
            known = self.registry.provider(server.provider)
            served: dict[str, dict[str, Any]] = {m: {} for m in server.models}
            if server.by_url:
                self.registry.serve(server.provider, server.models)
            elif known is None:
                self.registry.add_provider(ProviderInfo(name=server.provider, api="openai", base_url=server.base_url,
                                                        local=True, models=served))
            else:  # a built-in or configured local kind (ollama, …): add the models it runs now, where it runs them
                listed = None if known.served is None else tuple(dict.fromkeys((*server.models, *known.served)))
                self.registry.add_provider(dataclasses.replace(known, local=True, base_url=server.base_url,
                                                               models={**served, **known.models}, served=listed))
        self.detected = list(found)

    # ------------------------------------------------------------ what a server runs a model with

    def known(self, model: ModelInfo) -> ModelInfo:
        """`model` with what is known about its window now; never waits."""
        found = self._facts.get(key_of(model))
        if found is not None:
            return refine(model, found)
        if not model.window_known:
            key = key_of(model)
            if key not in self._windows:  # state.json is read once per model, not per status
                self._windows[key] = self.state.learned_window(*key)
            learned = self._windows[key]
            if learned:
                self._remembered.add(key_of(model))
                return dataclasses.replace(model, context_window=learned, window_known=True, send_max_tokens=True,
                                           max_tokens=min(model.max_tokens, max(learned // 4, 256)))
        return model

    def probe(self, model: ModelInfo | None) -> None:
        """Ask `model`'s server about it in the background (once; a cloud API is never asked)."""
        if model is None or not is_local_url(model.base_url):
            return
        key = key_of(model)
        if key in self._facts or key in self._probes:
            return
        server = model.provider if model.provider in ("ollama", "llamacpp", "lmstudio", "vllm") else None
        self._probes[key] = asyncio.ensure_future(self._ask(key, model, server))

    async def _ask(self, key: Key, model: ModelInfo, server: str | None) -> None:
        await asyncio.to_thread(ssl_context)  # built off the event loop: typing and sending go on meanwhile
        found = await detect_model_info(model.base_url, model.id, server=server, timeout=PROBE_TIMEOUT)
        self._facts[key] = found
        self._probes.pop(key, None)
        if found is not None and self.on_refined is not None:
            self.on_refined(key, found)

    async def settled(self) -> None:
        """Every question asked so far has its answer (tests, benchmarks)."""
        await asyncio.gather(*self._probes.values(), *([self._detecting] if self._detecting else []),
                             return_exceptions=True)

    def learned(self, model: ModelInfo, window: int) -> ModelInfo:
        """An overflow error stated `model`'s window: it is the window from now on, and, where the
        server says it nowhere else, on later runs too (state.json)."""
        told_nowhere = not model.window_known or key_of(model) in self._remembered
        if told_nowhere:
            self._remembered.add(key_of(model))
            self._windows[key_of(model)] = window
            self.state.remember_window(*key_of(model), window)
        if told_nowhere or model.context_window > window:
            return dataclasses.replace(model, context_window=window, window_known=True)
        return model

    def close(self) -> None:
        for task in [*self._probes.values(), *([self._detecting] if self._detecting else [])]:
            task.cancel()
        self._probes.clear()
