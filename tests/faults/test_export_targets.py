"""Issue 21 item 1: an export never replaces what its path names. A device or FIFO is written
into, a link is written through (the link stays), a disk or a socket is refused with one line,
a new export is private (0600), and a killed export leaves no temporary file behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import treechat.export.target as export_target
import treechat.export.whole_file as whole_file
from treechat.cli.main import main
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, UserMessage

from .helpers import env

FORMATS = ["jsonl", "md", "html"]
IS_ROOT = os.geteuid() == 0


@pytest.fixture
def place(tmp_path) -> tuple[list[str], str, Path]:
    """(--home/--storage arguments, a session's id, a folder to export into)."""
    home = tmp_path / "home"

    async def make() -> str:
        catalog = await open_catalog("sqlite", home)
        try:
            storage = await catalog.create(cwd=str(tmp_path))
            session = await Session.open(storage)
            await session.append_message(UserMessage(content="a question " + "q" * 200_000))  # over a pipe's buffer
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


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


class Reader(threading.Thread):
    """Reads a FIFO to its end (or, `stall`, opens it and never reads)."""

    def __init__(self, path: Path, stall: bool = False) -> None:
        super().__init__(daemon=True)
        self.path, self.stall, self.data = path, stall, b""
        self.opened = threading.Event()
        self.release = threading.Event()

    def run(self) -> None:
        with open(self.path, "rb") as f:
            self.opened.set()
            if self.stall:
                self.release.wait(30)
                return
            self.data = f.read()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_link_to_the_null_device_stays_a_link_and_the_device_stays_a_device(capsys, place, fmt):
    work = place[2]
    link = work / "out"
    link.symlink_to(os.devnull)
    assert export(capsys, place, fmt, link) == (0, "")
    assert link.is_symlink() and os.readlink(link) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and temps(work) == []


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_character_device_is_written_into_never_replaced(capsys, place, fmt):
    work = place[2]
    node = work / "null"  # our own null device: a regression replaces it, not the system's
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert export(capsys, place, fmt, node) == (0, "")
    assert stat.S_ISCHR(node.lstat().st_mode) and temps(work) == []


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_the_full_device_is_one_line(capsys, place):
    node = place[2] / "full"  # our own /dev/full (never the system's: a regression would replace it)
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    code, err = export(capsys, place, "jsonl", node)
    assert (code, err) == (1, f"treechat: Cannot write {node}: no space left on device\n")
    assert stat.S_ISCHR(node.lstat().st_mode)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fifo_is_written_into_and_stays_a_fifo(capsys, place, fmt):
    work = place[2]
    fifo = work / "pipe"
    os.mkfifo(fifo)
    reader = Reader(fifo)
    reader.start()
    assert export(capsys, place, fmt, fifo) == (0, "")
    reader.join(10)
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and temps(work) == []
    assert b"an answer" in reader.data
    if fmt == "jsonl":
        assert json.loads(reader.data.splitlines()[0])["type"] == "session"


def test_a_fifo_nobody_reads_is_refused_after_a_bounded_wait(capsys, place, monkeypatch):
    monkeypatch.setattr(export_target, "FIFO_WAIT", 0.3)
    fifo = place[2] / "pipe"
    os.mkfifo(fifo)
    code, err = export(capsys, place, "jsonl", fifo)
    assert (code, err) == (1, f"treechat: Cannot write {fifo}: it is a FIFO and nothing opened it for reading "
                              "within 0.3 s\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.slow  # waits for the export's bound
def test_a_reader_that_stops_reading_ends_the_export_with_one_line(capsys, place, monkeypatch):
    monkeypatch.setattr(export_target, "STALL", 0.3)
    fifo = place[2] / "pipe"
    os.mkfifo(fifo)
    reader = Reader(fifo, stall=True)
    reader.start()
    try:
        code, err = export(capsys, place, "md", fifo)
    finally:
        reader.release.set()
    assert (code, err) == (1, f"treechat: Cannot write {fifo}: nothing was read from it for 0.3 s\n")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_link_to_a_file_is_written_through(capsys, place, fmt):
    work = place[2]
    real = work / "real.out"
    real.write_text("old\n")
    real.chmod(0o640)
    link = work / "link.out"
    link.symlink_to(real.name)  # relative, as people make them
    assert export(capsys, place, fmt, link) == (0, "")
    assert link.is_symlink() and os.readlink(link) == real.name
    assert "an answer" in real.read_text("utf-8") and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert temps(work) == []


def test_a_dangling_link_makes_its_target(capsys, place):
    work = place[2]
    link = work / "link.jsonl"
    link.symlink_to("made.jsonl")
    assert export(capsys, place, "jsonl", link) == (0, "")
    assert link.is_symlink() and "an answer" in (work / "made.jsonl").read_text("utf-8")
    assert stat.S_IMODE((work / "made.jsonl").stat().st_mode) == 0o600


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_new_export_is_private(capsys, place, fmt):
    target = place[2] / f"x.{fmt}"
    old = os.umask(0o022)
    try:
        assert export(capsys, place, fmt, target) == (0, "")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_socket_is_refused_with_one_line(capsys, place):
    path = place[2] / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        assert export(capsys, place, "html", path) == (
            1, f"treechat: Cannot write {path}: it is a socket; write to a file or a FIFO\n")
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        server.close()


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_a_block_device_is_refused_with_one_line(capsys, place):
    node = place[2] / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    assert export(capsys, place, "jsonl", node) == (
        1, f"treechat: Cannot write {node}: it is a block device (a disk); an export is never written onto one\n")
    assert stat.S_ISBLK(node.lstat().st_mode)


KILLED = r"""
import asyncio, os, signal, sys
from pathlib import Path
from treechat.export.target import ExportFile

async def main():
    out = await ExportFile.open(Path(sys.argv[1]))
    for _ in range(64):
        out.write(b"x" * 65536)  # 4 MB, half an export
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


def test_a_killed_export_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "big.html"
    target.write_text("the earlier export\n")
    done = subprocess.run([sys.executable, "-c", KILLED, str(target)], env=env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == -signal.SIGKILL and "written" in done.stdout, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.html"]
    assert target.read_text() == "the earlier export\n"


def test_a_named_leftover_of_a_killed_export_goes_at_the_next(capsys, place, monkeypatch):
    # where there is no O_TMPFILE the temporary file has a name, tagged with its process id
    work = place[2]
    target = work / "x.jsonl"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (work / f".x.jsonl.treechat-{dead.pid}.tmp").write_bytes(b"x" * 1000)
    monkeypatch.setattr(whole_file, "hidden_file", lambda folder_fd, mode: None)
    assert export(capsys, place, "jsonl", target) == (0, "")
    assert sorted(p.name for p in work.iterdir()) == ["x.jsonl"]
