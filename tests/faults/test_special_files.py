"""Issue 21 item 7: special files are refused with one line, never read. A FIFO as treechat.db
printed a 25-line traceback; `import FIFO`, an import of the zero device and `-p -` reading it hung;
a database linked to the zero device was called a damaged search index; piped stdin had no bound
(a 50 MB prompt was sent)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from typing import IO, Any

import pytest

import treechat.cli.piped_input as piped_input
from treechat.cli.piped_input import PipedInputError, read_piped
from treechat.storage import open_catalog

from .helpers import env, one_line, treechat


def run(*argv: str, stdin: int | IO[Any] | None = subprocess.DEVNULL,
        data: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "treechat", *argv], stdin=stdin if data is None else None,
                          input=None if data is None else data.decode("latin-1"), capture_output=True, text=True,
                          env=env(), timeout=60)


def test_a_fifo_as_the_database_is_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.mkfifo(home / "treechat.db")
    line = one_line(treechat("--home", str(home), "sessions"))
    assert f"The database {home / 'treechat.db'} is a FIFO, not a file" in line and "--home DIR" in line


def test_a_database_linked_to_the_zero_device_is_not_called_a_damaged_index(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "treechat.db").symlink_to(os.devnull.replace("null", "zero"))
    line = one_line(treechat("--home", str(home), "search", "anything"))
    assert "is a character device, not a file" in line and "reindex" not in line


@pytest.mark.parametrize("target", ["fifo", "zero"])
def test_import_of_a_fifo_or_the_zero_device_is_one_failure_not_a_hang(tmp_path, target):
    if target == "fifo":
        path = tmp_path / "s.jsonl"
        os.mkfifo(path)
        kind = "a FIFO"
    else:
        path, kind = tmp_path / "zero.jsonl", "a character device"
        path.symlink_to("/dev/zero")
    line = one_line(treechat("--home", str(tmp_path / "home"), "import", str(path)))
    assert f"1 failed: {path}: is {kind}, not a session file; not read" in line


def test_a_fifo_in_a_folder_is_skipped_and_the_rest_imported(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    os.mkfifo(folder / "a-fifo.jsonl")
    (folder / "b.jsonl").write_text('{"type":"session","version":3,"id":"real-one","timestamp":"2025-01-01T00:00:00Z",'
                                    '"cwd":"/"}\n{"type":"message","id":"a1","parentId":null,"timestamp":'
                                    '"2025-01-01T00:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}\n')
    done = treechat("--home", str(tmp_path / "home"), "import", str(folder))
    assert done.stdout == "real-one\n" and "imported 1 session" in done.stderr and "a-fifo.jsonl: is a FIFO" in done.stderr


async def test_a_fifo_among_jsonl_sessions_is_passed_over_when_listing(tmp_path):
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        storage = await catalog.create(session_id="kept")
        from treechat.storage.model import MessageEntry, UserMessage

        await storage.append_entry(MessageEntry(id="a1", parent_id=None, message=UserMessage(content="hello")))
        os.mkfifo(storage.file.parent / "2025-01-01T00-00-00-000Z_fifo.jsonl")  # type: ignore[attr-defined]
    finally:
        await catalog.close()
    catalog = await open_catalog("jsonl", tmp_path)
    try:
        rows = await asyncio_wait(catalog.list())
        assert [r.id for r in rows] == ["kept"]
        assert "is a FIFO, not a file" in catalog.problems[0]  # type: ignore[attr-defined]
    finally:
        await catalog.close()


async def asyncio_wait(work):  # a hang here is the bug: fail instead of waiting forever
    import asyncio

    return await asyncio.wait_for(work, 20)


def test_p_dash_reading_the_zero_device_is_refused_at_the_bound(tmp_path):
    with open("/dev/zero", "rb") as zero:
        done = run("--home", str(tmp_path), "-p", "-", "--model", "openai/x", stdin=zero)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        "treechat: The piped text is over 1 MB (max_input_mb in config.toml); nothing was sent. Raise max_input_mb, "
        "or let the model read the file with the read tool."]


@pytest.mark.slow  # the real treechat process
def test_piped_text_past_the_bound_is_refused_and_the_setting_raises_it(tmp_path):
    big = b"a line of a large diff\n" * 100_000  # 2.3 MB
    done = run("--home", str(tmp_path), "-p", "review this", "--model", "openai/x", data=big)
    assert done.returncode == 1 and "The piped text is over 1 MB (max_input_mb in config.toml)" in done.stderr
    (tmp_path / "config.toml").write_text("max_input_mb = 3\n")
    done = run("--home", str(tmp_path), "-p", "review this", "--model", "openai/x", data=big)
    assert done.returncode != 0 and "piped text" not in done.stderr and "OPENAI_API_KEY" in done.stderr


def test_binary_piped_text_is_refused():
    with pytest.raises(PipedInputError, match="binary"):
        read_piped(io.StringIO("abc\x00def"), 1000)


@pytest.mark.slow  # the real treechat process, waiting on a silent pipe
def test_a_silent_pipe_is_said_once(monkeypatch):
    monkeypatch.setattr(piped_input, "NOTE_AFTER", 0.1)
    read_end, write_end = os.pipe()

    def later() -> None:
        time.sleep(0.5)
        os.write(write_end, b"late text")
        os.close(write_end)

    threading.Thread(target=later, daemon=True).start()
    err = io.StringIO()
    with os.fdopen(read_end, "r") as stdin:
        assert read_piped(stdin, 1000, err=err) == "late text"
    assert err.getvalue() == "treechat: still reading the piped text (0 bytes so far); Ctrl+C stops\n"


def test_attaching_a_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # (--yes: the FIFO is outside the working folder, which alone is refused in print mode)
    done = run("--home", str(tmp_path / "home"), "-p", "look", "-a", str(fifo), "--model", "openai/x", "--yes")
    assert done.returncode != 0 and f"{fifo} is a FIFO; only files can be attached." in done.stderr


def test_a_fifo_as_config_toml_is_one_line(tmp_path):
    os.mkfifo(tmp_path / "config.toml")
    line = one_line(treechat("--home", str(tmp_path), "-p", "hi"))
    assert f"{tmp_path / 'config.toml'}: it is a FIFO, not a file" in line
