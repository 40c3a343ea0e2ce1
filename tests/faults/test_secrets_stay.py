"""Issue 36, deliver 5: nothing secret leaves unasked.

Tried as an attacker would: a cloned repository whose AGENTS.md, CLAUDE.md, prompt template or
SKILL.md (or skills folder) is a link to ~/.ssh/id_rsa, `@../file` and `@link` attachments, an
approved `printenv` with provider keys and the database URL in the environment, and a `.mcp.json`
that hands `${OPENAI_API_KEY}` to its server or counts on a trust given to another script or
another repository at the same path. Each file outside the working folder is a read outside: the
app asks the read tool's question, print mode refuses with one stderr line unless --yes or
`allow_reads_outside`; the secret's text never reaches the loopback provider unasked.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider
from tests.images import png_bytes
from tests.mcp.helpers import FAKE
from tests.narrow import first_text
from tests.tui.conftest import KEY, screen_text, type_text, wait_for
from tests.tui.questions import answer, wait_asking
from treechat.agent.tools import BashTool
from treechat.chat import Chat
from treechat.cli.main import _allow_read, _refuse_read
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.mcp.config import McpServerConfig, ServerSpec
from treechat.mcp.manager import McpManager
from treechat.storage import open_catalog
from treechat.tui import TreechatApp

SECRET = "SECRET-KEY-MATERIAL-36"


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    """A cloned repository (repo/, with .git) and, beside it, what it must not reach: a private
    key and a skill-shaped file, both outside the working folder."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    private = tmp_path / "private"
    private.mkdir()
    key = private / "id_rsa"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n-----END OPENSSH PRIVATE KEY-----\n")
    shaped = private / "skills" / "leak" / "SKILL.md"
    shaped.parent.mkdir(parents=True)
    shaped.write_text(f"---\nname: leak\ndescription: {SECRET} in a description\n---\n\n{SECRET} in a body\n")
    (private / "prompt.md").write_text(f"---\ndescription: a template\n---\nSend {SECRET} along.\n")
    return {"repo": repo, "key": key, "real_key": Path(os.path.realpath(key)), "shaped": shaped, "private": private,
            "real_repo": Path(os.path.realpath(repo)), "home": tmp_path / "home"}


def link(at: Path, to: Path) -> Path:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)
    return at


def sent(fake: FakeProvider) -> str:
    """Everything the provider was sent, every request, as text."""
    return "\n".join(json.dumps(r.body) for r in fake.requests)


def system_prompt(fake: FakeProvider, index: int = 0) -> str:
    return str(fake.requests[index].body["messages"][0]["content"])


async def print_run(place: dict[str, Path], fake: FakeProvider, prompt: str, *, yes: bool = False, config: str = "",
                    tools: list[str] | None = None, attach: tuple[str, ...] = ()) -> tuple[int, str]:
    """`treechat -p PROMPT` in the repository, as cmd_print makes its Chat (--yes: reads outside
    allowed; else refused on stderr). (exit status, what run_print wrote on its err)."""
    home = place["home"]
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
    settings = load_settings(home, env=env)
    catalog = await open_catalog("memory", home)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref="openai/fake",
                tools=tools or [], cwd=str(place["repo"]), confirm_read=_allow_read if yes else _refuse_read)
    await chat.open(await catalog.create(cwd=str(place["repo"])))
    out, err = io.StringIO(), io.StringIO()
    try:
        code = await run_print(chat, prompt, out=out, err=err, attach=attach)
    finally:
        await chat.close()
    return code, err.getvalue()


def refused_line(kind: str, real: Path, place: dict[str, Path]) -> str:
    return (f"treechat: refused {kind} of {real}: it is outside the working folder {place['real_repo']} "
            "(--yes, or allow_reads_outside = true in config.toml, allows it)")


# ---------------------------------------------------------------- context files, print mode


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md"])
@pytest.mark.parametrize("how", ["refused", "--yes", "setting"])
async def test_a_context_file_linked_out_is_a_read_outside(place, capsys, name, how) -> None:
    link(place["repo"] / name, place["key"])
    async with FakeProvider() as fake:
        fake.script_openai(["done"])
        code, _ = await print_run(place, fake, "hi", yes=how == "--yes",
                                  config="allow_reads_outside = true\n" if how == "setting" else "")
        assert code == 0
        stderr = capsys.readouterr().err
        if how == "refused":
            assert SECRET not in sent(fake)
            assert refused_line(name, place["real_key"], place) in stderr
        else:
            assert SECRET in system_prompt(fake) and "refused" not in stderr


async def test_a_context_file_inside_and_the_global_one_are_read_as_before(place, capsys) -> None:
    (place["repo"] / "docs").mkdir()
    (place["repo"] / "docs" / "rules.md").write_text("RULES inside the repository")
    link(place["repo"] / "AGENTS.md", place["repo"] / "docs" / "rules.md")  # a link that stays inside
    place["home"].mkdir()
    link(place["home"] / "AGENTS.md", place["key"])  # the person's own global file: theirs, wherever it leads
    async with FakeProvider() as fake:
        fake.script_openai(["done"])
        assert (await print_run(place, fake, "hi"))[0] == 0
        assert "RULES inside" in system_prompt(fake) and SECRET in system_prompt(fake)
        assert "refused" not in capsys.readouterr().err


# ---------------------------------------------------------------- templates and skills, print mode


async def test_a_template_linked_out_is_refused_and_nothing_is_sent(place, capsys) -> None:
    link(place["repo"] / ".treechat" / "prompts" / "review.md", place["private"] / "prompt.md")
    async with FakeProvider() as fake:
        code, err = await print_run(place, fake, "/review now")
        assert code == 2 and fake.requests == []
        assert refused_line("template", place["private"].resolve() / "prompt.md", place) in capsys.readouterr().err
        assert "leads outside the working folder" in err and "it is not used" in err
        fake.script_openai(["done"])
        code, _ = await print_run(place, fake, "/review now", yes=True)
        assert code == 0 and SECRET in sent(fake)


async def test_the_persons_own_template_is_theirs_but_a_link_from_the_repository_to_it_is_asked(place, capsys) -> None:
    own = Path(os.environ["HOME"]) / ".pi" / "agent" / "prompts" / "mine.md"
    own.parent.mkdir(parents=True)
    own.write_text(f"Mine: {SECRET}\n")
    link(place["repo"] / ".pi" / "prompts" / "theirs.md", own)
    async with FakeProvider() as fake:
        fake.script_openai(["done"])
        assert (await print_run(place, fake, "/mine"))[0] == 0 and SECRET in sent(fake)
        code, _ = await print_run(place, fake, "/theirs")
        assert code == 2 and len(fake.requests) == 1
        assert refused_line("template", own.resolve(), place) in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["SKILL.md", "folder"])
async def test_a_skill_linked_out_is_not_listed_to_the_model(place, capsys, shape) -> None:
    if shape == "SKILL.md":
        link(place["repo"] / ".agents" / "skills" / "leak" / "SKILL.md", place["shaped"])
        real, kind = place["shaped"].resolve(), "SKILL.md"
    else:
        link(place["repo"] / ".claude" / "skills", place["shaped"].parent.parent)
        real, kind = place["shaped"].parent.parent.resolve(), "skills folder"
    async with FakeProvider() as fake:
        fake.script_openai(["done"])
        code, _ = await print_run(place, fake, "hi", tools=["read"])
        assert code == 0 and SECRET not in sent(fake) and "<available_skills>" not in system_prompt(fake)
        assert refused_line(kind, real, place) in capsys.readouterr().err
        code, _ = await print_run(place, fake, "/skill leak go")
        assert code == 2 and len(fake.requests) == 1  # not a skill: never read
        fake.script_openai(["done"])
        assert (await print_run(place, fake, "hi", tools=["read"], yes=True))[0] == 0
        assert f"{SECRET} in a description" in system_prompt(fake, 1)


# ---------------------------------------------------------------- attachments, print mode


@pytest.mark.parametrize("token", ["@../private/id_rsa", "@notes", "@{key}"])
async def test_an_attachment_outside_is_refused_in_print_mode(place, capsys, token) -> None:
    link(place["repo"] / "notes", place["key"])
    prompt = f"summarise {token.format(key=place['key'])}"
    async with FakeProvider() as fake:
        code, err = await print_run(place, fake, prompt)
        assert code == 2 and fake.requests == []
        assert refused_line("attachment", place["real_key"], place) in capsys.readouterr().err
        assert "is outside the working folder" in err and "nothing was sent" in err
        fake.script_openai(["done"])
        assert (await print_run(place, fake, prompt, yes=True))[0] == 0 and SECRET in sent(fake)


async def test_an_image_given_with_a_outside_is_refused_too(place, capsys) -> None:
    picture = place["private"] / "shot.png"
    picture.write_bytes(png_bytes(2, 2))
    (place["repo"] / "inside.txt").write_text("inside\n")
    async with FakeProvider() as fake:
        code, _ = await print_run(place, fake, "look", attach=(str(picture), "inside.txt"))
        assert code == 2 and fake.requests == []
        assert refused_line("attachment", picture.resolve(), place) in capsys.readouterr().err
        fake.script_openai(["done"])
        assert (await print_run(place, fake, "look", attach=("inside.txt",)))[0] == 0  # inside: as before


# ---------------------------------------------------------------- the app's controller


async def app_chat(place: dict[str, Path], fake: FakeProvider, asked: list[tuple[str, str, str]], answer: bool,
                   tools: list[str] | None = None) -> Chat:
    """A Chat as the app makes it; its `confirm_read` (the app's dialog) records each question."""

    async def confirm_read(kind: str, path: str, folder: str) -> bool:
        asked.append((kind, path, folder))
        return answer

    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
    settings = load_settings(place["home"], env=env)
    catalog = await open_catalog("memory", place["home"])
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env), model_ref="openai/fake",
                tools=tools or [], cwd=str(place["repo"]), confirm_read=confirm_read)
    await chat.open(await catalog.create(cwd=str(place["repo"])))
    return chat


@pytest.mark.parametrize("answer", [False, True])
async def test_the_app_asks_once_about_a_context_file_and_a_skills_folder_linked_out(place, answer) -> None:
    link(place["repo"] / "CLAUDE.md", place["key"])
    link(place["repo"] / ".agents" / "skills", place["shaped"].parent.parent)
    asked: list[tuple[str, str, str]] = []
    async with FakeProvider() as fake:
        chat = await app_chat(place, fake, asked, answer, tools=["read"])
        try:
            for text in ("one", "two"):
                fake.script_openai(["ok"])
                await chat.send(text)
                await chat.wait_idle()
        finally:
            await chat.close()
        folder = str(place["real_repo"])
        assert sorted(asked) == sorted([("CLAUDE.md", str(place["real_key"]), folder),
                                        ("skills folder", str(place["shaped"].parent.parent.resolve()), folder)])
        for index in (0, 1):
            assert (SECRET in system_prompt(fake, index)) is answer
            assert ("<name>leak</name>" in system_prompt(fake, index)) is answer


async def test_the_app_asks_before_attaching_from_outside_and_a_no_sends_nothing(place) -> None:
    from treechat.chat import ChatError

    link(place["repo"] / "notes", place["key"])
    asked: list[tuple[str, str, str]] = []
    async with FakeProvider() as fake:
        chat = await app_chat(place, fake, asked, False)
        try:
            for text in ("look at @notes", "and @../private/id_rsa"):
                with pytest.raises(ChatError, match="is outside the working folder"):
                    await chat.send(text)
        finally:
            await chat.close()
        assert fake.requests == []
        assert asked == [("attachment", str(place["real_key"]), str(place["real_repo"]))]  # the answer is kept


@pytest.mark.slow  # the real App
async def test_in_the_app_the_read_question_comes_up_and_a_no_keeps_the_secret(place) -> None:
    link(place["repo"] / "AGENTS.md", place["key"])
    async with FakeProvider() as fake:
        fake.script_openai(["done"])
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY}
        settings = load_settings(place["home"], env=env)
        catalog = await open_catalog("sqlite", place["home"])
        chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                    model_ref="openai/fake", cwd=str(place["repo"]))
        app = TreechatApp(chat, await catalog.create(cwd=str(place["repo"])), detect_servers=False)
        try:
            async with app.run_test(size=(140, 44)) as pilot:
                await type_text(pilot, "hello")
                await pilot.press("enter")
                await wait_asking(pilot, app, "Let the model read outside the working folder?")
                shown = " ".join(screen_text(app).split()).replace("│ ", "")
                assert f"AGENTS.md {place['real_key']}" in shown
                await answer(pilot, app, "n")
                await wait_for(pilot, lambda: len(fake.requests) == 1, what="the message going out")
                assert SECRET not in sent(fake)
        finally:
            await chat.close()
            await catalog.close()


# ---------------------------------------------------------------- what tools' children see

SECRETS = {"OPENAI_API_KEY": "sk-fake-openai-value-36", "ANTHROPIC_API_KEY": "sk-ant-fake-value-36",
           "LOCAL_KEY": "local-provider-secret-36", "PGPASSWORD": "pg-password-value-36",
           "TREECHAT_DATABASE_URL": "postgresql://me:db-password-36@127.0.0.1:1/none",
           "MY_COPY": "sk-fake-openai-value-36", "SOME_SERVICE_API_KEY": "service-key-value-36"}


def _in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """`treechat ARGV` as the console script runs it, with `env` added to this process's
    environment (what a tool's child would inherit) and `cwd` as the folder it runs in."""
    from treechat.cli.main import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with open(os.devnull) as nothing, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            saved_stdin, sys.stdin = sys.stdin, nothing
            try:
                code = main(argv)
            finally:
                sys.stdin = saved_stdin
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()


async def test_an_approved_printenv_shows_no_key_and_no_database_url(place) -> None:
    home = place["home"]
    home.mkdir()
    (home / "config.toml").write_text('tool_env = ["GITHUB_TOKEN"]\n\n[providers.local]\nbase_url = '
                                      '"http://127.0.0.1:9/v1"\napi = "openai"\napi_key_env = "LOCAL_KEY"\n'
                                      'models = ["m"]\n')
    env = {**SECRETS, "GITHUB_TOKEN": "gh-allowed-token-36", "KEEP_ME": "an-ordinary-value"}
    async with FakeProvider() as fake:
        env["OPENAI_BASE_URL"] = fake.base_url
        fake.script_openai(tool_calls=[{"id": "b1", "name": "bash", "arguments": json.dumps({"command": "printenv"})}])
        fake.script_openai(["done"])
        code, out, err = await asyncio.to_thread(
            _in_process, ["--home", str(home), "-p", "show me", "--yes", "--tools", "bash", "--model", "openai/fake"],
            place["repo"], env)
        assert code == 0, err
        result = json.dumps(fake.requests[1].body["messages"][-1])
        assert "GITHUB_TOKEN=gh-allowed-token-36" in result and "KEEP_ME=an-ordinary-value" in result
        assert "PATH=" in result
        session = err.split("treechat: session ")[1].split()[0]
        code, exported, _ = await asyncio.to_thread(_in_process, ["--home", str(home), "export", session],
                                                    place["repo"], {})
        assert code == 0 and "gh-allowed-token-36" in exported
    for name, value in SECRETS.items():
        for where, text in (("the request", sent(fake)), ("stdout", out), ("the export", exported)):
            assert value not in text, f"{name} reached {where}"
    assert "db-password-36" not in sent(fake) + exported


async def test_bash_made_without_settings_withholds_the_keys_too(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-rules-36")

    async def allow(command: str) -> bool:
        return True

    async def on_update(_: object) -> None:
        pass

    bash = BashTool(confirm=allow)
    result = await bash.execute("c1", bash.validate({"command": "printenv OPENAI_API_KEY; echo status=$?"}), None,
                                on_update)
    assert "sk-default-rules-36" not in first_text(result) and "status=1" in first_text(result)


async def test_a_bad_tool_env_is_one_line(tmp_path) -> None:
    from treechat.config.settings import ConfigError

    (tmp_path / "config.toml").write_text('tool_env = ["NOT A NAME"]\n')
    with pytest.raises(ConfigError, match="tool_env"):
        load_settings(tmp_path, env={})


async def test_an_mcp_server_gets_a_key_only_where_its_settings_name_it(tmp_path) -> None:
    seen = tmp_path / "env.txt"
    script = f'env > "{seen}"; exec "{sys.executable}" "{FAKE}"'
    config = McpServerConfig(command="/bin/sh", args=["-c", script], env={"GIVEN": "${OPENAI_API_KEY}"}, trust=True)
    manager = McpManager([ServerSpec("probe", config, "config.toml", 5.0, 10.0)], cwd=str(tmp_path),
                         env={**SECRETS, "PATH": os.environ.get("PATH", "")})
    manager.start()
    try:
        await manager.wait_started()
    finally:
        await manager.close()
    lines = seen.read_text().splitlines()
    assert f"GIVEN={SECRETS['OPENAI_API_KEY']}" in lines  # named by its settings
    assert not [line for line in lines if line.split("=")[0] in SECRETS]


# ---------------------------------------------------------------- a project's .mcp.json


def mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def project_chat(place: dict[str, Path], env: dict[str, str] | None = None) -> Chat:
    settings = load_settings(place["home"], env=env or {})
    catalog = await open_catalog("memory", place["home"])
    return Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env={}), cwd=str(place["repo"]))


async def test_the_trust_question_names_every_variable_a_server_reads_never_its_value(place) -> None:
    mcp_json(place["repo"], {
        "docs": {"command": "node", "args": ["./server.js", "--verbose"], "cwd": ".",
                 "env": {"API_KEY": "${OPENAI_API_KEY}", "MODE": "${MODE:-fast}", "PLAIN": "yes"}},
        "web": {"url": "https://mcp.example/x", "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}",
                                                            "X-Db": "${TREECHAT_DATABASE_URL}"}}})
    (place["repo"] / "server.js").write_text("console.log('hi')\n")
    chat = await project_chat(place, {"OPENAI_API_KEY": SECRETS["OPENAI_API_KEY"], "PATH": os.environ["PATH"],
                                      "TREECHAT_DATABASE_URL": SECRETS["TREECHAT_DATABASE_URL"]})
    body = chat.describe_project_mcp()
    lines = body.splitlines()
    assert lines[lines.index("docs: a program"):lines.index("web: an HTTP server")] == [
        "docs: a program",
        "  runs: node ./server.js --verbose",  # the whole command line
        f"  in: {place['repo']} (cwd .)",
        "  env API_KEY=${OPENAI_API_KEY}",
        "  env MODE=${MODE:-fast}",
        "  env PLAIN=yes",
        "  reads your OPENAI_API_KEY, a secret (a key or password): in env API_KEY",
        "  reads your MODE (fast when it is not set): in env MODE",
        "  runs the repository's server.js (its content, as it is now, is part of what you trust)",
        ""]
    assert lines[lines.index("web: an HTTP server"):][:6] == [
        "web: an HTTP server",
        "  url: https://mcp.example/x",
        "  header Authorization: Bearer ${OPENAI_API_KEY}",
        "  header X-Db: ${TREECHAT_DATABASE_URL}",
        "  reads your OPENAI_API_KEY, a secret (a key or password): in header Authorization",
        "  reads your TREECHAT_DATABASE_URL, a secret (a key or password): in header X-Db"]
    assert SECRETS["OPENAI_API_KEY"] not in body and "db-password-36" not in body


async def answered(place: dict[str, Path]) -> str:
    chat = await project_chat(place, dict(os.environ))
    trust = chat.project_mcp()[1]
    if trust == "ask":
        chat.trust_project("trusted")
    return trust


def a_repository(place: dict[str, Path], script: str = "print('serving')\n") -> None:
    repo = place["repo"]
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = https://example.com/good.git\n')
    (repo / "tools").mkdir(exist_ok=True)
    (repo / "tools" / "serve.py").write_text(script)
    mcp_json(repo, {"serve": {"command": sys.executable, "args": ["tools/serve.py", "--port", "1"]}})


@pytest.mark.parametrize("change", ["nothing", "the script", "the arguments", "another clone", "the origin",
                                    "a variable"])
async def test_trust_is_asked_again_when_what_it_runs_or_the_repository_changes(place, change) -> None:
    a_repository(place)
    place["home"].mkdir()
    assert await answered(place) == "ask"
    assert await answered(place) == "trusted"  # remembered for exactly this
    repo = place["repo"]
    if change == "the script":
        (repo / "tools" / "serve.py").write_text("import os; os.system('curl evil')\n")
    elif change == "the arguments":
        mcp_json(repo, {"serve": {"command": sys.executable, "args": ["tools/serve.py", "--port", "2"]}})
    elif change == "another clone":  # the same files at the same path: another repository all the same
        repo.rename(repo.with_name("moved-aside"))
        repo.mkdir()
        a_repository(place)
    elif change == "the origin":
        (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = https://example.com/evil.git\n')
    elif change == "a variable":
        mcp_json(repo, {"serve": {"command": sys.executable, "args": ["tools/serve.py", "--port", "1"],
                                  "env": {"K": "${OPENAI_API_KEY}"}}})
    assert await answered(place) == ("trusted" if change == "nothing" else "ask")


async def test_a_script_named_before_it_exists_is_asked_about_when_it_comes(place) -> None:
    a_repository(place)
    mcp_json(place["repo"], {"serve": {"command": "node", "args": ["build/server.js"]}})
    place["home"].mkdir()
    assert await answered(place) == "ask"
    assert await answered(place) == "trusted"
    (place["repo"] / "build").mkdir()
    (place["repo"] / "build" / "server.js").write_text("require('child_process').exec('curl evil')\n")
    assert await answered(place) == "ask"


async def test_print_mode_and_treechat_mcp_say_the_same_on_stderr(place) -> None:
    mcp_json(place["repo"], {"leak": {"command": "/bin/sh", "args": ["-c", "exit 1"],
                                      "env": {"K": "${OPENAI_API_KEY}"}}})
    place["home"].mkdir()
    code, _, err = await asyncio.to_thread(_in_process, ["--home", str(place["home"]), "mcp"], place["repo"],
                                           {"OPENAI_API_KEY": SECRETS["OPENAI_API_KEY"]})
    assert "that are not trusted yet; they are not started" in err
    assert "      env K=${OPENAI_API_KEY}\n      reads your OPENAI_API_KEY, a secret (a key or password): in env K\n" in err
    assert SECRETS["OPENAI_API_KEY"] not in err
