"""A sub-agent's session from the command line, on every persistent backend: `-p` runs the child,
`treechat sessions` lists it under its parent, `treechat tree` links the two both ways."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.cli.main import main
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import BACKENDS, open_catalog


@pytest.fixture(params=[b for b in BACKENDS if b != "memory"])
def kind(request) -> str:
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # TREECHAT_DATABASE_URL: a fresh database
    return request.param


def task(call_id: str, description: str, prompt: str) -> dict[str, str]:
    return {"id": call_id, "name": "task", "arguments": json.dumps({"description": description, "prompt": prompt})}


async def cli(capsys, *argv: str) -> str:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


async def test_a_childs_session_is_listed_under_its_parent_and_linked_in_the_tree(kind, tmp_path, capsys) -> None:
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[task("t1", "count files", "Count the files.")])
        fake.script_openai(["three"])
        fake.script_openai(["The sub-agent says three."])
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
        catalog = await open_catalog(kind, tmp_path)
        try:
            settings = load_settings(tmp_path, env=env)
            chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                        model_ref="openai/fake-model", cwd=str(tmp_path), local_servers=())
            await chat.open(await catalog.create(cwd=str(tmp_path)))
            out, err = io.StringIO(), io.StringIO()
            assert await run_print(chat, "How many files?", out=out, err=err) == 0, err.getvalue()
            assert out.getvalue() == "The sub-agent says three.\n"
            parent = chat.session_id
            await chat.close()
        finally:
            await catalog.close()
    home = ["--home", str(tmp_path), "--storage", kind]
    rows = json.loads(await cli(capsys, "sessions", "--json", *home))
    child = next(r["id"] for r in rows if r["parentSessionId"] == parent)
    listed = (await cli(capsys, "sessions", *home)).splitlines()
    assert [line[:13] for line in listed] == [parent[:13], child[:13]]  # the child right under its parent
    assert listed[1].endswith("⑂ count files") and listed[0].endswith("How many files?")
    tree = json.loads(await cli(capsys, "tree", child, *home))
    assert tree["parentSessionId"] == parent and tree["parentEntryId"]
    assert tree["entries"][0]["customType"] == "treechat.task" and tree["entries"][0]["data"]["toolCallId"] == "t1"
    results = [e["message"] for e in json.loads(await cli(capsys, "tree", parent, *home))["entries"]
               if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert [r["details"]["childSessionId"] for r in results] == [child]
    assert "parentSessionId" not in json.loads(await cli(capsys, "tree", parent, *home))
