"""Recovery files: the home's folder first, then a private folder of this user's in the temporary
folder; never another user's folder, never through a link, and no empty or half file left behind
by a write that fails."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from treechat.session.recovery import private_temp_folder, save_unsaved
from treechat.storage.model import TextContent, UserMessage

SID = "0191f2c4-session"
OTHER_UID = 12345


@pytest.fixture
def temp(tmp_path, monkeypatch) -> Path:
    """The system's temporary folder, for these tests: a folder of the test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def fallback(temp: Path) -> Path:
    return temp / f"treechat-recovery-{os.getuid()}"


def message(text: str = "the whole answer") -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def unwritable(tmp_path: Path) -> Path:
    """A home recovery folder that cannot be made (its parent is a file: refused even for root)."""
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("")
    return blocker / "recovery"


def kept(path: Path) -> list[str]:
    return [json.loads(line)["message"]["content"][0]["text"] for line in path.read_text().splitlines()]


def fail_writes_under(monkeypatch, folder: Path, *, after: int = 0) -> None:
    """os.write into files under `folder` writes `after` bytes, then fails with ENOSPC (a full disk)."""
    real_write = os.write
    state = {"left": after}

    def write(fd: int, data) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
            return real_write(fd, data)
        if state["left"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real_write(fd, bytes(data[:state["left"]]))
        state["left"] -= n
        return n

    monkeypatch.setattr(os, "write", write)  # (what treechat.session.recovery writes with)


def test_the_home_folder_takes_it_first_and_later_messages_are_appended(tmp_path, temp):
    home = tmp_path / "home" / "recovery"
    assert save_unsaved(message("one"), SID, "disk full", [home]) == home / f"{SID}.jsonl"
    assert save_unsaved(message("two"), SID, "disk full", [home]) == home / f"{SID}.jsonl"
    assert kept(home / f"{SID}.jsonl") == ["one", "two"]
    assert stat.S_IMODE((home / f"{SID}.jsonl").stat().st_mode) == 0o600
    assert not fallback(temp).exists()


def test_the_fallback_is_a_private_folder_of_this_user(tmp_path, temp):
    path = save_unsaved(message(), SID, "disk full", [unwritable(tmp_path)])
    assert path == fallback(temp) / f"{SID}.jsonl"
    assert kept(path) == ["the whole answer"]
    st = os.lstat(fallback(temp))
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # the folder it made is used again
    assert save_unsaved(message("again"), SID, "disk full", []) == path
    assert kept(path) == ["the whole answer", "again"]


def test_a_fallback_folder_owned_by_someone_else_is_refused(tmp_path, temp):
    folder = fallback(temp)
    folder.mkdir(mode=0o700)
    os.chown(folder, OTHER_UID, OTHER_UID)
    assert private_temp_folder() is None
    assert save_unsaved(message(), SID, "disk full", [unwritable(tmp_path)]) is None
    assert list(folder.iterdir()) == []


def test_a_fallback_folder_others_may_enter_is_refused(tmp_path, temp):
    folder = fallback(temp)
    folder.mkdir()
    folder.chmod(0o755)
    assert save_unsaved(message(), SID, "disk full", [unwritable(tmp_path)]) is None
    assert list(folder.iterdir()) == []


def test_a_fallback_that_is_a_link_is_refused_even_to_a_folder_of_ours(tmp_path, temp):
    target = tmp_path / "prepared"
    target.mkdir(mode=0o700)
    os.symlink(target, fallback(temp))
    assert private_temp_folder() is None
    assert save_unsaved(message(), SID, "disk full", [unwritable(tmp_path)]) is None
    assert list(target.iterdir()) == []


def test_a_fallback_that_is_a_file_is_refused(tmp_path, temp):
    fallback(temp).write_text("")
    assert save_unsaved(message(), SID, "disk full", [unwritable(tmp_path)]) is None


def test_a_recovery_file_that_is_a_link_is_not_followed(tmp_path, temp):
    home = tmp_path / "home" / "recovery"
    home.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    os.symlink(victim, home / f"{SID}.jsonl")
    path = save_unsaved(message(), SID, "disk full", [home])
    assert path == fallback(temp) / f"{SID}.jsonl"  # the next folder took it
    assert victim.read_text() == "untouched\n"
    assert kept(path) == ["the whole answer"]


def test_a_failed_write_leaves_no_file_and_the_next_folder_takes_it(tmp_path, temp, monkeypatch):
    home = tmp_path / "home" / "recovery"
    fail_writes_under(monkeypatch, home)
    path = save_unsaved(message(), SID, "disk full", [home])
    assert path == fallback(temp) / f"{SID}.jsonl"
    assert list(home.iterdir()) == []  # no 0-byte file left
    assert kept(path) == ["the whole answer"]


def test_a_write_that_fails_part_way_leaves_no_half_file(tmp_path, temp, monkeypatch):
    home = tmp_path / "home" / "recovery"
    fail_writes_under(monkeypatch, home, after=10)
    path = save_unsaved(message(), SID, "disk full", [home])
    assert path == fallback(temp) / f"{SID}.jsonl"
    assert list(home.iterdir()) == []


def test_a_failed_append_cuts_the_file_back_to_its_earlier_lines(tmp_path, temp, monkeypatch):
    home = tmp_path / "home" / "recovery"
    assert save_unsaved(message("earlier"), SID, "disk full", [home]) is not None
    before = (home / f"{SID}.jsonl").read_bytes()
    fail_writes_under(monkeypatch, home, after=10)
    assert save_unsaved(message("later"), SID, "disk full", [home]) == fallback(temp) / f"{SID}.jsonl"
    assert (home / f"{SID}.jsonl").read_bytes() == before


def test_nowhere_to_write_is_none_and_leaves_nothing(tmp_path, temp, monkeypatch):
    fail_writes_under(monkeypatch, tmp_path)  # the home and the temporary folder are both full
    home = tmp_path / "home" / "recovery"
    assert save_unsaved(message(), SID, "disk full", [home]) is None
    assert list(home.iterdir()) == [] and list(fallback(temp).iterdir()) == []


def test_a_named_pipe_in_place_of_the_file_is_passed_over_without_waiting(tmp_path, temp):
    home = tmp_path / "home" / "recovery"
    home.mkdir(parents=True)
    os.mkfifo(home / f"{SID}.jsonl")
    assert save_unsaved(message(), SID, "disk full", [home]) == fallback(temp) / f"{SID}.jsonl"
