"""Two machines sharing one history: two treechat homes whose config.toml points at one
PostgreSQL server (over TCP, with a password), several writer processes on each, all talking to
one session at once through the real controller (`Chat.prompt` against the loopback fake
provider). Nothing is lost, the tree stays whole, and both machines see the same session."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.fake_provider import FakeProvider
from tests.narrow import of
from treechat.storage import open_catalog
from treechat.storage.model import MessageEntry, UserMessage, message_text

from .helpers import env

MACHINES, WRITERS, ROUNDS = 2, 3, 4

WRITER = """
import asyncio, json, sys
from pathlib import Path
from treechat.bootstrap import load_environment, open_store, storage_kind
from treechat.chat import Chat

async def main():
    home, tag, rounds, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    environment = load_environment(home)  # this machine's config.toml: storage = "postgres"
    settings = environment.settings
    catalog = await open_store(storage_kind(settings=settings), home, settings=settings)
    chat = Chat(catalog=catalog, settings=settings, registry=environment.registry, model_ref="openai/fake-model",
                cwd=str(home))
    await chat.open(await catalog.open("shared"))
    (home / f"ready-{tag}").touch()
    while not go.exists():
        await asyncio.sleep(0.005)
    mine = []
    for r in range(rounds):
        await chat.poll_others()  # as the app's feed would: others' entries join, under our leaf adopted
        reply = await chat.prompt(f"{tag} round {r}")
        assert reply is not None and reply.stop_reason == "stop", reply
        mine.append(chat.leaf_id)
    await chat.close()
    await catalog.close()
    print(json.dumps(mine))

asyncio.run(main())
"""


def _config(home: Path, url: str, fake: FakeProvider) -> dict[str, str]:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'storage = "postgres"\ndatabase_url = "{url}"\n')
    child = {**env(), "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.base_url}
    child.pop("TREECHAT_DATABASE_URL", None)  # each machine finds its server in its own config.toml
    return child


async def test_two_machines_three_writers_each_four_rounds_lose_nothing(pg_server, pg_database, tmp_path):
    if not pg_server.own:
        import pytest

        pytest.skip("needs the throw-away cluster (a password login over TCP)")
    url = pg_server.tcp_url(pg_database.name)
    seed = await open_catalog("postgres", tmp_path, database_url=url)
    shared = await seed.create(session_id="shared", cwd="/both")
    await shared.append_entry(MessageEntry(id="seed0001", parent_id=None, message=UserMessage(content="seed")))
    await seed.close()
    async with FakeProvider() as fake:
        def answer(request):  # every request gets "re: <its last prompt>"
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            last: dict[str, Any] = next((m for m in reversed(messages or []) if m.get("role") == "user"), {})
            content = last.get("content")
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict))
            return fake.openai_reply([f"re: {text}"])

        fake.responder = answer
        go = tmp_path / "go"
        procs = []
        for m in range(MACHINES):
            home = tmp_path / f"machine-{m}"
            child_env = _config(home, url, fake)
            for w in range(WRITERS):
                procs.append(await asyncio.create_subprocess_exec(
                    sys.executable, "-c", WRITER, str(home), f"m{m}w{w}", str(ROUNDS), str(go),
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env))
        homes = [tmp_path / f"machine-{m}" for m in range(MACHINES)]
        for _ in range(3000):  # every writer has the session open before any writes
            ready = sum(1 for h in homes for _ in h.glob("ready-*"))
            if ready == MACHINES * WRITERS or any(p.returncode is not None for p in procs):
                break
            await asyncio.sleep(0.01)
        go.touch()
        outs = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 240)
    assert all(p.returncode == 0 for p in procs), [o[1].decode()[-1500:] for o in outs]
    leaves = [leaf for out, _ in outs for leaf in json.loads(out.decode().strip().splitlines()[-1])]

    views = [await open_catalog("postgres", tmp_path, database_url=url) for _ in range(MACHINES)]
    try:
        s = await views[0].open("shared")
        entries = [e for e in await s.get_entries() if e.type != "leaf"]
        by_id = {e.id: e for e in entries}
        assert len(by_id) == len(entries)  # no id twice
        said = [e for e in entries if isinstance(e, MessageEntry)]
        prompts = [message_text(e.message) for e in said if e.message.role == "user"]
        expected = ["seed"] + [f"m{m}w{w} round {r}" for m in range(MACHINES) for w in range(WRITERS)
                               for r in range(ROUNDS)]
        assert sorted(prompts) == sorted(expected)  # every prompt, exactly once
        replies = [e for e in said if e.message.role == "assistant"]
        assert len(replies) == MACHINES * WRITERS * ROUNDS
        for reply in replies:  # each reply hangs under its own prompt
            parent = of(MessageEntry, by_id[of(str, reply.parent_id)])
            assert message_text(reply.message) == f"re: {message_text(parent.message)}"
        for e in entries:  # a whole tree: every parent is there, every path reaches the seed
            assert e.parent_id is None or e.parent_id in by_id
            path = await s.get_path_to_root(e.id)
            assert path[0].id == "seed0001" and (await s.get_path_state(e.id)).depth == len(path)
        assert set(leaves) <= set(by_id)
        stats = await s.get_session_stats()
        assert stats.entry_count == len(entries) and stats.message_count == 1 + 2 * MACHINES * WRITERS * ROUNDS
        # the other machine sees the same session, the same leaf (the last move won) and the same tree
        other = await views[1].open("shared")
        assert await other.get_leaf_id() == await s.get_leaf_id() in by_id
        assert await other.get_tree_rows() == await s.get_tree_rows()
        assert [r.id for r in await views[1].list()] == [r.id for r in await views[0].list()] == ["shared"]
    finally:
        for view in views:
            await view.close()
