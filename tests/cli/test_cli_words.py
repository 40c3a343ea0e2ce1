"""Words that were stale or wrong on the command line (issue 37): `-p --ephemeral` offered to
continue a session nothing kept; `import` of a named file that is no session exited 0; search
hits were labelled by session id rather than by what a person knows the session by."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from tests.fake_provider import FakeProvider
from tests.faults.helpers import treechat_here
from tests.fixtures import PI_FIXTURES


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


@pytest.mark.parametrize("flags, kept", [(["--ephemeral"], False), (["--storage", "memory"], False), ([], True)])
async def test_p_says_how_to_continue_only_a_session_that_was_kept(fake, tmp_path, monkeypatch, flags, kept):
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    fake.script_openai(["answered"])
    done = await asyncio.to_thread(treechat_here, "--home", str(tmp_path), *flags, "-p", "hi",
                                   "--model", "openai/fake-model")
    assert done.returncode == 0 and done.stdout == "answered\n", done.stderr
    (line,) = done.stderr.strip().splitlines()
    if kept:
        assert line.startswith("treechat: session ") and "continue with -c" in line
    else:
        assert line == "treechat: nothing was kept (--ephemeral, or storage memory): this session cannot be continued"


def test_a_named_file_that_is_no_session_fails_with_one_line(tmp_path):
    home = ["--home", str(tmp_path / "home")]
    for name, text in (("notes.jsonl", '{"hello": "not a session"}\n'), ("notes.txt", "plain words\n"),
                       ("empty.jsonl", "")):
        (tmp_path / name).write_text(text)
        done = treechat_here("import", str(tmp_path / name), *home)
        (line,) = done.stderr.strip().splitlines()
        assert done.returncode == 1 and done.stdout == "", line
        assert f"Session file {tmp_path / name}" in line and "not a Pi or treechat session" in line
    # a folder: what is no session is skipped, and named
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(tmp_path / "notes.jsonl", folder / "notes.jsonl")
    shutil.copy(PI_FIXTURES / "treechat-checkpoints.jsonl", folder / "real.jsonl")
    done = treechat_here("import", str(folder), *home)
    assert done.returncode == 0 and len(done.stdout.split()) == 1, done.stderr
    assert "1 file not a session, skipped (notes.jsonl)" in done.stderr


def test_search_hits_are_labelled_by_the_sessions_name_or_first_message(tmp_path):
    home = ["--home", str(tmp_path / "home")]
    lines = (PI_FIXTURES / "treechat-checkpoints.jsonl").read_text().splitlines()
    for n in (1, 2):  # one conversation twice, under two ids: two sessions with one title
        header = {**json.loads(lines[0]), "id": f"0000000{n}-aaaa-4aaa-8aaa-00000000000{n}"}
        (tmp_path / f"s{n}.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
        assert treechat_here("import", str(tmp_path / f"s{n}.jsonl"), *home).returncode == 0
    (tmp_path / "s3.jsonl").write_text("\n".join([json.dumps({**json.loads(lines[0]), "id": "00000003-bbbb"}),
                                                  *lines[1:3]]).replace("make notes", "write the notes") + "\n")
    assert treechat_here("import", str(tmp_path / "s3.jsonl"), *home).returncode == 0
    out = treechat_here("search", "notes role:user", *home).stdout.splitlines()
    assert sorted(line.split("  ")[0] for line in out) == [
        "make notes · 00000001-aaaa", "make notes · 00000002-aaaa", "write the notes"]
