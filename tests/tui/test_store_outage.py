"""The store fails during a run (issue 37): a PostgreSQL server that becomes unreachable, a
SQLite database that is full. The error says what happened (the database and its host, never
a password), a prompt that could not be saved goes back into the composer and is not sent, a
reply that could not be saved stays on screen, and nothing reads "stopped by you"."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.pg_cluster import PASSWORD
from treechat.widgets.composer.view import Composer

from .conftest import screen_text, type_text, wait_for

PROMPT = "a long question " * 400  # 6.4 KB: a full database has no page left for it


class Outage:
    """A loopback TCP hop between treechat and the real PostgreSQL server: `cut()` is the server
    gone from the network (every connection dropped, new ones refused)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._links: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> Outage:
        self._server = await asyncio.start_server(self._link, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cut()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self._links |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in self._links:
            writer.transport.abort()
        self._links.clear()


def banner(app: Any) -> str:
    return str(app.query_one("#banner").render()) if app.query_one("#banner").display else ""


def kept_in(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((tmp_path / "recovery").glob("*.jsonl")) for line in f.read_text().splitlines()]


@pytest.fixture
async def postgres_outage(pg_server, pg_database, monkeypatch) -> AsyncIterator[Outage]:
    if not pg_server.own:
        pytest.skip("the outage is made on the tests' own cluster (reached over TCP)")
    monkeypatch.setattr("treechat.storage.postgres.db.CONNECT_WAIT", 1.0)  # the pool's wait, as 10 s would
    async with Outage(pg_server.port) as outage:
        url = pg_server.tcp_url(pg_database.name).replace(f":{pg_server.port}/", f":{outage.port}/")
        monkeypatch.setenv("TREECHAT_DATABASE_URL", url)
        yield outage


async def test_postgres_going_away_mid_run_says_so_and_loses_nothing(make_app, fake, postgres_outage, tmp_path):
    held = asyncio.Event()
    fake.script_openai(["the reply ", "that could not be saved"], gate=held)
    async with make_app(storage_kind="postgres") as (app, pilot):
        await type_text(pilot, "first question")
        await pilot.press("enter")
        await fake.until_requests(1)  # the prompt is saved and sent; the reply is held back
        await postgres_outage.cut()  # the server goes away while the reply comes
        held.set()
        await wait_for(pilot, lambda: "The reply could not be saved" in banner(app), what="the failure", rounds=1500)
        await wait_for(pilot, lambda: not app.chat.is_running, what="the run's end")
        await pilot.pause()
        said = banner(app)
        where = f"PostgreSQL at 127.0.0.1:{postgres_outage.port}"
        assert where in said and "server is down, unreachable" in said and PASSWORD not in said, said
        assert "the run stopped" in said and "recovery" in said  # and it stays: the run did not go through
        shown = screen_text(app)
        assert "that could not be saved" in shown and "stopped by you" not in shown

        await type_text(pilot, "second question, typed with care")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Your message was not sent" in banner(app), what="the refusal", rounds=1500)
        await wait_for(pilot, lambda: not app.chat.is_running, what="the run's end")
        await pilot.pause()
        assert app.query_one(Composer).text == "second question, typed with care"  # back where it was typed
        assert where in banner(app) and PASSWORD not in banner(app)
        assert len(fake.requests) == 1  # it did not go out
        assert "stopped by you" not in screen_text(app)
    assert [k["message"]["role"] for k in kept_in(tmp_path)] == ["assistant", "user"]


async def test_a_full_sqlite_store_gives_the_prompt_back_unsent_then_sends_it(make_app, fake, tmp_path):
    fake.script_openai(["answered once there was room"])
    async with make_app() as (app, pilot):
        await app.chat.ensure_agent()  # its settings entries written
        db = app.chat.catalog.db
        pages = await db.run(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
        await db.run(lambda c: c.execute(f"PRAGMA max_page_count = {pages}").fetchone())  # the disk is full
        await type_text(pilot, PROMPT)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Your message was not sent" in banner(app), what="the refusal")
        await wait_for(pilot, lambda: not app.chat.is_running, what="the run's end")
        await pilot.pause()
        assert "disk is full" in banner(app) and "recovery" in banner(app)
        assert app.query_one(Composer).text == PROMPT.strip() and fake.requests == []
        assert "stopped by you" not in screen_text(app)

        await db.run(lambda c: c.execute("PRAGMA max_page_count = 1073741823").fetchone())  # room again
        app.query_one(Composer).focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: "answered once there was room" in screen_text(app), what="the reply")
        await wait_for(pilot, lambda: not app.chat.is_running and not banner(app), what="the banner to go")
        sent = [m for m in fake.requests[0].body["messages"] if m["role"] == "user"]
        assert len(sent) == 1  # the unsaved first try is not in the context twice
    assert [k["message"]["role"] for k in kept_in(tmp_path)] == ["user"]
