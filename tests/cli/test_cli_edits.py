"""edit and write from the command line, end to end through the real parser: `-p --yes` applies the
model's changes inside the working folder and refuses one outside it, `treechat files` lists what
changed, `treechat restore` puts the files back (and refuses, naming them, files changed since),
`--undo` brings back what a restore replaced."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.fake_provider import FakeProvider
from treechat.cli.main import build_parser, cmd_print, main
from treechat.storage import BACKENDS


def call(call_id: str, name: str, **args) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


@pytest.fixture(params=[b for b in BACKENDS if b != "memory"])
def place(request, tmp_path, monkeypatch):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # a throw-away database on the run's server (or a skip)
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    monkeypatch.chdir(work)
    return work, ["--home", str(tmp_path / "home"), "--storage", request.param]


def run_print(monkeypatch, capsys, home: list[str], *argv: str, script) -> tuple[int, str, str]:
    async def go() -> int:
        async with FakeProvider() as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "k")
            script(fake)
            return await cmd_print(build_parser().parse_args([*home, "--model", "openai/gpt-4.1", *argv]))

    code = asyncio.run(go())
    out, err = capsys.readouterr()
    return code, out, err


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_print_mode_edits_with_yes_and_restore_follows_the_tree(place, monkeypatch, capsys):
    work, home = place
    outside = work.parent / "outside.txt"

    def script(fake):
        fake.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="one\n")])
        fake.script_openai(tool_calls=[call("c2", "edit", path="notes.txt", edits=[{"oldText": "one", "newText": "two"}])])
        fake.script_openai(tool_calls=[call("c3", "write", path="../outside.txt", content="no\n")])
        fake.script_openai(["done"])

    code, out, err = run_print(monkeypatch, capsys, home, "-p", "make notes", "--tools", "write,edit", "--yes",
                               script=script)
    assert code == 0, err
    assert (work / "notes.txt").read_text() == "two\n" and not outside.exists()
    assert "treechat: created notes.txt (+1 −0)" in err and "treechat: edited notes.txt (+1 −1)" in err
    assert "write: Not changed:" in err and "outside the working folder" in err
    found = re.search(r"session (\S+) \(continue", err)
    assert found, err
    sid = found.group(1)

    code, out, err = cli(capsys, *home, "files", sid, "--json")
    assert code == 0, err
    [tracked] = json.loads(out)["files"]
    assert tracked["shown"] == "notes.txt" and [c["tool"] for c in tracked["changes"]] == ["write", "edit"]
    before_write = tracked["changes"][0]["parentId"]
    code, out, _ = cli(capsys, *home, "files", sid)
    assert code == 0 and "notes.txt  (2 changes; at the leaf: same as on disk)" in out

    # to before the write: the file did not exist; back to the leaf: it is back
    code, out, err = cli(capsys, *home, "restore", sid, "--to", before_write, "--yes")
    assert code == 0, err
    assert "removed notes.txt" in out and not (work / "notes.txt").exists()
    code, out, err = cli(capsys, *home, "restore", sid, "--to", "leaf", "--yes")
    assert code == 0 and (work / "notes.txt").read_text() == "two\n"
    code, out, _ = cli(capsys, *home, "restore", sid, "--to", "leaf", "--yes")
    assert code == 0 and "Nothing to restore" in out

    # a file someone else changed blocks the restore, named; --force overwrites; --undo brings it back
    (work / "notes.txt").write_text("mine\n")
    code, out, err = cli(capsys, *home, "restore", sid, "--to", "root", "--yes")
    assert code == 1 and "not restored: notes.txt changed on disk since treechat last wrote it" in err
    assert (work / "notes.txt").read_text() == "mine\n"
    code, out, err = cli(capsys, *home, "restore", sid, "--to", "root", "--yes", "--force")
    assert code == 0 and not (work / "notes.txt").exists()
    code, out, err = cli(capsys, *home, "restore", sid, "--undo")
    assert code == 0, err
    assert (work / "notes.txt").read_text() == "mine\n"
    # the undo before that (of the restore to the leaf) would overwrite "mine" again: refused, named
    code, _, err = cli(capsys, *home, "restore", sid, "--undo")
    assert code == 1 and "not undone: notes.txt changed since the restore" in err
    assert (work / "notes.txt").read_text() == "mine\n"


def test_without_yes_print_mode_changes_nothing_and_says_how(place, monkeypatch, capsys):
    work, home = place

    def script(fake):
        fake.script_openai(tool_calls=[call("c1", "write", path="notes.txt", content="one\n")])
        fake.script_openai(["ok"])

    code, out, err = run_print(monkeypatch, capsys, home, "-p", "make notes", "--tools", "write", script=script)
    assert code == 0 and not (work / "notes.txt").exists()
    assert "refused the model's file write: -p asks no questions; --yes allows commands and edits" in err


def test_restore_needs_a_target_and_names_unknown_entries(place, capsys):
    _, home = place
    code, _, err = cli(capsys, *home, "restore", "nope", "--to", "x")
    assert code == 1 and "No session matches" in err
    code, _, err = cli(capsys, *home, "restore", "nope")
    assert code == 1 and "give --to ENTRY" in err
