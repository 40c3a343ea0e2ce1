"""Issue 21 item 9: read, ls and grep look outside the working folder only when the user says so.
They read anything the user could (`..`, absolute paths, links; as root, the shadow password
file) with no question. The working folder is the repository root (the nearest `.git` upward),
or the folder treechat runs in; a link that leads out counts as outside. The app asks with the
dialog typing cannot answer; print mode refuses, saying so on stderr, unless --yes or
`allow_reads_outside = true` allows it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from tests.tui.conftest import KEY, screen_text, type_text, wait_for
from tests.tui.questions import answer, wait_asking
from treechat.agent.tools import Reach, make_tools
from treechat.chat import Chat
from treechat.cli.main import _allow_read, _refuse_read
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.tui import TreechatApp


@pytest.fixture
def place(tmp_path) -> dict[str, Path]:
    """A repository with a subfolder to work in, a secret beside the repository, links out and in."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "src" / "code.py").write_text("needle inside\n")
    (repo / "README").write_text("needle at the root\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("needle SECRET\n")
    (repo / "src" / "out-link").symlink_to(secret)
    (repo / "src" / "in-link").symlink_to(repo / "README")
    # what the messages name: the real paths (read here, not in the async tests)
    return {"repo": repo, "cwd": repo / "src", "secret": secret, "real_repo": Path(os.path.realpath(repo)),
            "real_secret": Path(os.path.realpath(secret))}


def tools(place, confirm=None) -> dict[str, object]:
    reach = Reach.for_run(place["cwd"], confirm)
    return {t.name: t for t in make_tools(["read", "ls", "grep"], cwd=place["cwd"], reach=reach)}


async def call(tool, **args) -> tuple[str, bool]:
    result = await tool.execute("c1", tool.Args(**args), None, lambda _: None)
    return result.content[0].text, result.is_error


@pytest.mark.parametrize("path", ["../../secret.txt", "{secret}", "out-link"])
async def test_reading_outside_is_refused_when_nobody_can_be_asked(place, path):
    text, error = await call(tools(place)["read"], path=path.format(**place))
    assert error and "SECRET" not in text
    assert f"is outside the working folder {place['real_repo']}" in text
    assert "--yes (or allow_reads_outside = true in config.toml) allows it" in text


@pytest.mark.parametrize("path", ["code.py", "../README", "in-link", "{repo}/README"])
async def test_anywhere_in_the_repository_is_inside(place, path):
    text, error = await call(tools(place)["read"], path=path.format(**place))
    assert not error and "needle" in text


async def test_without_a_repository_the_working_folder_is_where_treechat_runs(tmp_path):
    (tmp_path / "here").mkdir()
    (tmp_path / "above.txt").write_text("above\n")
    read = {t.name: t for t in make_tools(["read"], cwd=tmp_path / "here",
                                          reach=Reach.for_run(tmp_path / "here", None))}["read"]
    text, error = await call(read, path="../above.txt")
    assert error and "outside the working folder" in text


async def test_ls_and_grep_outside_are_refused_too(place):
    made = tools(place)
    text, error = await call(made["ls"], path=str(place["secret"].parent))
    assert error and "outside the working folder" in text and "secret.txt" not in text
    text, error = await call(made["grep"], pattern="needle", path=str(place["secret"].parent))
    assert error and "SECRET" not in text


async def test_grep_inside_skips_a_link_that_leads_out(place):
    text, error = await call(tools(place)["grep"], pattern="needle", path=".")
    assert not error and "needle inside" in text and "needle at the root" in text  # in-link: inside
    assert "SECRET" not in text and "[Skipped 1 link that lead outside" in text


async def test_a_yes_reads_it_and_the_question_names_the_real_path(place):
    asked: list[tuple[str, str, str]] = []

    async def confirm(tool: str, path: str, folder: str) -> bool:
        asked.append((tool, path, folder))
        return True

    text, error = await call(tools(place, confirm)["read"], path="out-link")
    assert not error and "SECRET" in text
    assert asked == [("read", str(place["real_secret"]), str(place["real_repo"]))]


# ---------------------------------------------------------------- print mode, end to end


def read_call(path: str) -> dict[str, str]:
    return {"id": "r1", "name": "read", "arguments": json.dumps({"path": path})}


async def print_mode(place, fake: FakeProvider, confirm_read, config: str = "") -> tuple[int, str, str]:
    home = place["repo"].parent / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
    settings = load_settings(home, env=env)
    catalog = await open_catalog("memory", home)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref="openai/fake",
                tools=["read"], cwd=str(place["cwd"]), confirm_read=confirm_read)
    await chat.open(await catalog.create(cwd=str(place["cwd"])))
    out, err = io.StringIO(), io.StringIO()
    try:
        code = await run_print(chat, "read it", out=out, err=err)
    finally:
        await chat.close()
    return code, out.getvalue(), err.getvalue()


def result_sent(fake: FakeProvider) -> str:
    return json.dumps(fake.requests[1].body["messages"][-1])


@pytest.mark.parametrize("how", ["refused", "--yes", "setting"])
async def test_print_mode_refuses_unless_allowed(place, capsys, how):
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[read_call(str(place["secret"]))])
        fake.script_openai(["done"])
        confirm = _allow_read if how == "--yes" else _refuse_read
        code, _, _ = await print_mode(place, fake, confirm, "allow_reads_outside = true\n" if how == "setting" else "")
        assert code == 0
        stderr = capsys.readouterr().err
        if how == "refused":
            assert "SECRET" not in result_sent(fake) and "outside the working folder" in result_sent(fake)
            assert (f"treechat: refused read of {place['real_secret']}: it is outside the working folder "
                    f"{place['real_repo']} (--yes, or allow_reads_outside = true in config.toml, allows it)"
                    ) in stderr
        else:
            assert "SECRET" in result_sent(fake) and "refused" not in stderr


# ---------------------------------------------------------------- the app


@pytest.mark.slow  # the real App
async def test_the_app_asks_with_the_dialog_typing_cannot_answer(place):
    async with FakeProvider() as fake:
        fake.script_openai(tool_calls=[read_call("out-link")])
        fake.script_openai(tool_calls=[{**read_call("out-link"), "id": "r2"}])
        fake.script_openai(["done"])
        home = place["repo"].parent / "apphome"
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
        settings = load_settings(home, env=env)
        catalog = await open_catalog("sqlite", home)
        chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                    model_ref="openai/fake", cwd=str(place["cwd"]), tools=["read"])
        app = TreechatApp(chat, await catalog.create(cwd=str(place["cwd"])), detect_servers=False)
        try:
            async with app.run_test(size=(140, 44)) as pilot:
                await type_text(pilot, "read it")
                await pilot.press("enter")
                panel = await wait_asking(pilot, app, "Let the model read outside the working folder?")
                shown = " ".join(screen_text(app).split())
                assert str(place["real_secret"]) in shown.replace("│ ", "")
                panel.gate.armed_from += 600  # "typed at once", however slow the machine
                await pilot.press(*"yes")  # typed at once: not an answer, and kept
                await pilot.pause()
                assert not panel.answered and app.composer.text == "yes"
                panel.gate.armed_from -= 600
                await pilot.press("escape")
                await answer(pilot, app, "n")
                await wait_for(pilot, lambda: len(fake.requests) == 2, what="the refusal going back")
                assert "SECRET" not in result_sent(fake)
                second = await wait_asking(pilot, app, "Let the model read outside", what="the second question")
                assert second.gate.state == "typing"  # they typed during this run: Esc first
                await pilot.press("escape")
                await answer(pilot, app, "y")
                await wait_for(pilot, lambda: len(fake.requests) == 3, what="the read going back")
                assert "SECRET" in json.dumps(fake.requests[2].body["messages"][-1])
        finally:
            await chat.close()
            await catalog.close()
