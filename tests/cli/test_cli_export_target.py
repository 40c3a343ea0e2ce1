"""`treechat export -o TARGET` where TARGET cannot be written: one line on stderr naming the path
the person typed (never the temporary file written beside it), exit code 1, no traceback, and
nothing left behind — for every format."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from treechat.cli.main import main
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, UserMessage

FORMATS = ["jsonl", "md", "html"]
WORDED = ["jsonl", "md", "html"]


@pytest.fixture
def place(tmp_path) -> tuple[list[str], str, Path]:
    """(--home/--storage arguments, a session's id, a folder to export around)."""
    home = tmp_path / "home"

    async def make() -> str:
        catalog = await open_catalog("sqlite", home)
        try:
            storage = await catalog.create(cwd=str(tmp_path))
            session = await Session.open(storage)
            await session.append_message(UserMessage(content="a question"))
            await session.append_message(AssistantMessage(content=[TextContent(text="an answer")],
                                                          provider="openai", model="m"))
            return storage.session_id
        finally:
            await catalog.close()

    work = tmp_path / "work"
    work.mkdir()
    return ["--home", str(home), "--storage", "sqlite"], asyncio.run(make()), work


def export(capsys, place, fmt: str, target: Path) -> tuple[int, str]:
    home, sid, _ = place
    code = main(["export", sid, "--format", fmt, "-o", str(target), *home])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def assert_one_line_naming(err: str, target: Path) -> None:
    assert err.startswith("treechat: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert str(target) in err and "Traceback" not in err and ".tmp" not in err, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_to_a_directory_is_one_line_naming_it(capsys, place, fmt):
    work = place[2]
    target = work / "somedir"
    target.mkdir()
    code, err = export(capsys, place, fmt, target)
    assert code == 1
    assert_one_line_naming(err, target)
    assert list(target.iterdir()) == [] and leftovers(work) == []


@pytest.mark.parametrize("fmt", WORDED)
def test_export_to_a_directory_says_it_is_one(capsys, place, fmt):
    target = place[2] / "somedir"
    target.mkdir()
    assert export(capsys, place, fmt, target) == (1, f"treechat: Cannot write {target}: it is a directory\n")


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_into_a_missing_folder_is_one_line_naming_the_file(capsys, place, fmt):
    work = place[2]
    target = work / "nonexistent" / "dir" / "x.html"
    code, err = export(capsys, place, fmt, target)
    assert code == 1
    assert_one_line_naming(err, target)
    assert not (work / "nonexistent").exists()  # no folder made for it either
    assert leftovers(work) == []


@pytest.mark.parametrize("fmt", WORDED)
def test_export_into_a_missing_folder_names_the_folder(capsys, place, fmt):
    target = place[2] / "nonexistent" / "dir" / "x.html"
    assert export(capsys, place, fmt, target) == (
        1, f"treechat: Cannot write {target}: the folder {target.parent} does not exist\n")


@pytest.mark.parametrize("fmt", ["jsonl", "html"])
def test_export_under_a_file_says_it_is_not_a_folder(capsys, place, fmt):
    work = place[2]
    (work / "notes.txt").write_text("mine\n")
    target = work / "notes.txt" / "x.html"
    assert export(capsys, place, fmt, target) == (1, f"treechat: Cannot write {target}: {work / 'notes.txt'} is not a folder\n")
    assert (work / "notes.txt").read_text() == "mine\n" and leftovers(work) == []


@pytest.mark.parametrize("fmt", ["jsonl", "html"])
def test_a_failure_after_the_temporary_file_is_made_names_the_target(capsys, place, fmt, monkeypatch):
    """The rename at the end fails (the folder became read-only, say): the person's path is named
    and the temporary file is gone."""
    import os

    work = place[2]
    target = work / "x.out"
    real_replace = os.replace

    def refuse(src, dst, *args, **kwargs):
        if os.path.basename(dst) == target.name:  # (renamed by name in its folder's descriptor)
            raise PermissionError(13, "Permission denied", str(src))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refuse)
    assert export(capsys, place, fmt, target) == (1, f"treechat: Cannot write {target}: permission denied\n")
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_to_a_writable_path_still_works(capsys, place, fmt):
    work = place[2]
    target = work / f"x.{fmt}"
    code, err = export(capsys, place, fmt, target)
    assert (code, err) == (0, "")
    assert "an answer" in target.read_text(encoding="utf-8") and leftovers(work) == []


@pytest.mark.parametrize("fmt", ["jsonl", "html"])
def test_a_full_disk_part_way_names_the_target_and_leaves_no_half_file(capsys, place, fmt, monkeypatch):
    import errno

    from treechat.export.target import ExportFile

    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ExportFile, "_write", full)
    work = place[2]
    target = work / "x.out"
    assert export(capsys, place, fmt, target) == (1, f"treechat: Cannot write {target}: no space left on device\n")
    assert list(work.iterdir()) == []
