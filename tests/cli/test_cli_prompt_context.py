"""The command line's share of issue 12: `context --json` shows the system prompt, `--system`
adds to it, and `-p … -a FILE` sends the attachment (parsed by the real parser)."""

from __future__ import annotations

import base64
import json

from tests.fake_provider import FakeProvider
from tests.images import png_bytes, write
from treechat.cli.main import build_parser, cmd_print, main


def test_context_json_includes_the_system_prompt(capsys, tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('system_prompt = "Cite file paths."\ntools = ["read", "ls"]\n')
    (home / "AGENTS.md").write_text("GLOBAL: be careful")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "AGENTS.md").write_text("PROJECT: use pytest")
    monkeypatch.chdir(tmp_path)  # not the session's folder: its own folder (the project) is what counts
    lines = [json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z",
                         "cwd": str(project)}),
             json.dumps({"type": "message", "id": "m1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z",
                         "message": {"role": "user", "content": "hi", "timestamp": 1}})]
    (tmp_path / "one.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["--home", str(home), "--storage", "jsonl", "import", str(tmp_path / "one.jsonl")]) == 0
    sid = capsys.readouterr().out.strip()

    assert main(["--home", str(home), "--storage", "jsonl", "--system", "Be brief.", "context", sid, "--json"]) == 0
    ctx = json.loads(capsys.readouterr().out)
    prompt = ctx["systemPrompt"]
    assert [m["role"] for m in ctx["messages"]] == ["user"]
    for part in ("You are the assistant in treechat", "- read:", "- ls:", "Cite file paths.", "Be brief.",
                 "GLOBAL: be careful", "PROJECT: use pytest", f"- Working folder: {project}"):
        assert part in prompt, part
    assert prompt.index("GLOBAL") < prompt.index("PROJECT")


def test_attach_is_repeatable_and_system_is_parsed() -> None:
    args = build_parser().parse_args(["-p", "look", "-a", "a.png", "--attach", "b.txt", "--system", "Be brief."])
    assert (args.prompt, args.attach, args.system) == ("look", ["a.png", "b.txt"], "Be brief.")
    assert build_parser().parse_args([]).attach is None


async def test_print_mode_sends_attachments_from_the_command_line(tmp_path, monkeypatch) -> None:
    write(tmp_path / "shot.png", png_bytes(3, 2))
    (tmp_path / "todo.txt").write_text("buy milk\n")
    monkeypatch.chdir(tmp_path)
    async with FakeProvider() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        fake.script_openai(["seen"])
        args = build_parser().parse_args(["--home", str(tmp_path / "home"), "--storage", "memory",
                                          "--model", "openai/gpt-4.1",
                                          "-p", "check @todo.txt", "-a", "shot.png", "--system", "Be brief."])
        assert await cmd_print(args) == 0
        body = fake.requests[0].body
    assert "Be brief." in body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    assert user[0]["text"] == 'check todo.txt\n\n<file path="todo.txt">\nbuy milk\n</file>'
    assert user[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png_bytes(3, 2)).decode()


def test_context_json_shows_the_instructions_the_app_stored_unless_system_is_given(capsys, tmp_path) -> None:
    import asyncio

    from treechat.session.instructions import CUSTOM_TYPE
    from treechat.session.session import Session
    from treechat.storage import open_catalog
    from treechat.storage.model import UserMessage

    async def make() -> str:
        catalog = await open_catalog("sqlite", tmp_path)
        try:
            storage = await catalog.create(cwd=str(tmp_path))
            session = await Session.open(storage)
            await session.append_message(UserMessage(content="hi"))
            await session.append_custom(CUSTOM_TYPE, {"text": "Answer in French."})  # what /system TEXT writes
            return storage.session_id
        finally:
            await catalog.close()

    sid = asyncio.run(make())
    assert main(["--home", str(tmp_path), "context", sid, "--json"]) == 0
    assert "Answer in French." in json.loads(capsys.readouterr().out)["systemPrompt"]
    assert main(["--home", str(tmp_path), "--system", "Answer in Dutch.", "context", sid, "--json"]) == 0
    prompt = json.loads(capsys.readouterr().out)["systemPrompt"]
    assert "Answer in Dutch." in prompt and "French" not in prompt
