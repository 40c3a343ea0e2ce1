"""`treechat acp`'s agent: the ACP methods an editor calls, on treechat's sessions.

- `initialize`: protocol version 1; loadSession; prompts with images and embedded context (no
  audio); MCP servers over stdio and HTTP; session/list; no authentication (keys come from the
  environment and config.toml, as everywhere in treechat);
- `session/new`: a new treechat session in the store, working in the editor's `cwd`;
- `session/load`: a treechat session by its id (any of `treechat sessions`, from any front end),
  its path replayed (history.py) before the answer;
- `session/list`: the store's sessions with something in them (those of `cwd` when given);
- `session/set_config_option`: the model and the thinking level (options.py);
- `session/prompt`, `session/cancel`: session.py.

Each session has its own controller (`Chat`), its MCP servers (config.toml's, the project's
trusted `.mcp.json`, and the editor's: servers.py) and its answers "for this session".
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from treechat import __version__
from treechat.bootstrap import Environment
from treechat.bounded_json import RawObject
from treechat.chat import Chat, ChatError
from treechat.storage.base import SessionCatalog, SessionStorage, StorageError

from .options import config_options, set_option
from .prompt import Block
from .servers import Given, server_specs
from .session import AcpSession, Offered, chat_error

log = logging.getLogger("treechat.acp")
PAGE = 100  # sessions per session/list answer


@dataclass(frozen=True)
class Choices:
    """What the command line chose for every session: `--model`, `--tools`, `--system`."""

    model: str | None = None
    tools: Sequence[str] | None = None
    system: str | None = None


def _no_session(session_id: str) -> RequestError:
    return RequestError(-32002, f"No session {session_id} here.", {"sessionId": session_id})


class TreechatAgent:
    def __init__(self, catalog: SessionCatalog, env: Environment, choices: Choices) -> None:
        self.catalog, self.env, self.choices = catalog, env, choices
        self.client: Client | None = None
        self.offered = Offered()
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # ------------------------------------------------------------ the connection

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: object) -> InitializeResponse:
        caps = client_capabilities or ClientCapabilities()
        fs = caps.fs
        self.offered = Offered(read_files=bool(fs and fs.read_text_file), write_files=bool(fs and fs.write_text_file),
                               terminal=bool(caps.terminal))
        if client_info is not None:
            log.info("client: %s %s", client_info.name, client_info.version)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities())),
            agent_info=Implementation(name="treechat", title="treechat", version=__version__),
            auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: object) -> AuthenticateResponse | None:
        raise RequestError.invalid_params({"details": "treechat has no sign-in: keys come from the environment "
                                                      "and config.toml"})

    async def close(self) -> None:
        """The client went away: every run stops (what it said is stored), every session closes."""
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception as err:  # noqa: BLE001  closing everything at the end: one failing must not keep the rest open
                log.warning("could not close session %s: %s", session.session_id, err)
        self.sessions.clear()

    # ------------------------------------------------------------ sessions

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Given] | None = None, **kwargs: object) -> NewSessionResponse:
        folder = await self._folder(cwd)
        try:
            storage = await self.catalog.create(cwd=folder)
        except StorageError as err:
            raise RequestError(-32603, str(err), {"details": str(err)}) from None
        session = await self._open(storage, folder, mcp_servers)
        await session.announce_commands()
        return NewSessionResponse(session_id=session.session_id, config_options=config_options(session.chat))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Given] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: object) -> LoadSessionResponse:
        folder = await self._folder(cwd)
        try:
            storage = await self.catalog.open(session_id)
        except StorageError:
            raise _no_session(session_id) from None
        if storage.session_id != session_id:  # a prefix matched: an editor names sessions whole
            raise _no_session(session_id)
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await old.close()
        session = await self._open(storage, folder, mcp_servers)
        await session.replay()
        await session.announce_commands()
        return LoadSessionResponse(config_options=config_options(session.chat))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: object) -> ListSessionsResponse:
        rows = [r for r in await self.catalog.list() if r.entry_count > 0 and (cwd is None or r.cwd == cwd)]
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = rows[start:start + PAGE]
        more = start + PAGE < len(rows)
        return ListSessionsResponse(
            sessions=[SessionInfo(session_id=r.id, cwd=r.cwd or "/", title=r.name or r.first_message[:200] or None,
                                  updated_at=r.modified_at) for r in page],
            next_cursor=str(start + PAGE) if more else None)

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: object) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        try:
            await set_option(session.chat, config_id, value)
        except ChatError as err:
            raise RequestError.invalid_params({"details": str(err)}) from None
        return SetSessionConfigOptionResponse(config_options=config_options(session.chat))

    # ------------------------------------------------------------ turns

    async def prompt(self, session_id: str, prompt: list[Block], **kwargs: object) -> PromptResponse:
        return await self._session(session_id).prompt(prompt)

    async def cancel(self, session_id: str, **kwargs: object) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    # ------------------------------------------------------------ what treechat does not do

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: object) -> SetSessionModeResponse | None:
        raise RequestError.method_not_found("session/set_mode (treechat has no modes: see session/set_config_option)")

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Given] | None = None, **kwargs: object) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: list[Given] | None = None, **kwargs: object) -> ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def close_session(self, session_id: str, **kwargs: object) -> CloseSessionResponse | None:
        raise RequestError.method_not_found("session/close")

    async def ext_method(self, method: str, params: RawObject) -> RawObject:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: RawObject) -> None:
        log.info("ignored the notification _%s", method)

    # ------------------------------------------------------------ helpers

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise _no_session(session_id)
        return session

    @staticmethod
    async def _folder(cwd: str) -> str:
        absolute = os.path.isabs(cwd)  # noqa: ASYNC240  no I/O: the string alone
        if not absolute or not await asyncio.to_thread(os.path.isdir, cwd):
            raise RequestError.invalid_params({"details": f"cwd must be the absolute path of a folder: {cwd!r}"})
        return os.path.normpath(cwd)  # noqa: ASYNC240  no I/O: the string alone

    async def _open(self, storage: SessionStorage, cwd: str, mcp_servers: list[Given] | None) -> AcpSession:
        assert self.client is not None, "on_connect comes first"
        settings = self.env.settings
        chat = Chat(catalog=self.catalog, settings=settings, registry=self.env.registry, model_ref=self.choices.model,
                    tools=self.choices.tools, cwd=cwd, system=self.choices.system)
        try:
            await chat.open(storage)
        except (ChatError, StorageError) as err:
            raise chat_error(ChatError(str(err))) from None
        session = AcpSession(chat, self.client, self.offered)
        chat.mcp.add(server_specs(mcp_servers, settings.mcp_timeout))
        chat.start_mcp()
        self.sessions[session.session_id] = session
        return session


__all__ = ["TreechatAgent", "Choices"]
