"""edit and write through the agent's tool interface: Pi's shapes, the edge cases, the approvals."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from treechat.agent.tools import make_tools
from treechat.agent.tools.changes import ProposedChange
from treechat.agent.tools.edit import approve_inside
from treechat.llm.abort import AbortSignal


@pytest.fixture
def folder(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)  # the working folder is the repository root
    return work


class Asked:
    """An approver that says yes (or `answer`) and remembers what it was shown."""

    def __init__(self, answer: bool | str = True) -> None:
        self.answer = answer
        self.changes: list[Any] = []

    async def __call__(self, change: ProposedChange) -> bool | str:
        self.changes.append(change)
        return self.answer


def tools(folder, approve=None):
    edit, write = make_tools(["edit", "write"], cwd=folder, approve=approve or Asked())
    return edit, write


async def call(tool, **args):
    async def on_update(_):
        pass

    return await tool.execute("id", tool.validate(tool.prepare_arguments(args)), AbortSignal(), on_update)


def text(result) -> str:
    return result.content[0].text


async def test_write_creates_the_file_and_its_folders_then_edit_changes_it(folder) -> None:
    asked = Asked()
    edit, write = tools(folder, asked)
    done = await call(write, path="notes/todo.txt", content="one\ntwo\nthree\n")
    assert not done.is_error and text(done) == "Successfully wrote 14 bytes to notes/todo.txt"
    assert (folder / "notes" / "todo.txt").read_text() == "one\ntwo\nthree\n"
    assert done.details["created"] and done.details["added"] == 3 and done.details["path"] == "notes/todo.txt"
    done = await call(edit, path="notes/todo.txt", edits=[{"oldText": "two", "newText": "TWO\n2"}])
    assert text(done) == "Successfully replaced 1 block(s) in notes/todo.txt."
    assert (folder / "notes" / "todo.txt").read_text() == "one\nTWO\n2\nthree\n"
    assert (done.details["added"], done.details["removed"]) == (2, 1)
    assert "-two\n+TWO\n+2" in done.details["diff"]
    first, second = asked.changes
    assert first.tool == "write" and first.created and first.summary == "notes/todo.txt +3 \u22120"
    assert second.tool == "edit" and not second.outside and second.diff == done.details["diff"]


async def test_several_edits_apply_together_against_the_original(folder) -> None:
    (folder / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    edit, _ = tools(folder)
    done = await call(edit, path="a.py", edits=[{"oldText": "z = 3", "newText": "z = 30"},
                                                 {"oldText": "x = 1", "newText": "x = 10"}])
    assert text(done) == "Successfully replaced 2 block(s) in a.py."
    assert (folder / "a.py").read_text() == "x = 10\ny = 2\nz = 30\n"


async def test_legacy_arguments_and_edits_sent_as_a_json_string(folder) -> None:
    (folder / "a.txt").write_text("hello world\n")
    edit, _ = tools(folder)
    assert not (await call(edit, path="a.txt", oldText="hello", newText="hi")).is_error
    assert (folder / "a.txt").read_text() == "hi world\n"
    assert not (await call(edit, path="a.txt", edits=json.dumps([{"oldText": "world", "newText": "there"}]))).is_error
    assert (folder / "a.txt").read_text() == "hi there\n"


@pytest.mark.parametrize("edits, message", [
    ([{"oldText": "absent", "newText": "x"}],
     "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."),
    ([{"oldText": "b", "newText": "x"}],
     "Found 2 occurrences of the text in a.txt (at lines 2, 3). The text must be unique."),
    ([{"oldText": "a", "newText": "x"}, {"oldText": "nope", "newText": "y"}], "Could not find edits[1] in a.txt."),
    ([{"oldText": "a\nb", "newText": "x"}, {"oldText": "b\nb", "newText": "y"}],
     "edits[0] and edits[1] overlap in a.txt. Merge them into one edit or target disjoint regions."),
    ([{"oldText": "", "newText": "x"}], "oldText must not be empty in a.txt."),
    ([{"oldText": "a", "newText": "a"}], "No changes made to a.txt."),
    ([], "Edit tool input is invalid. edits must contain at least one replacement."),
])
async def test_an_edit_that_cannot_apply_changes_nothing_and_says_why(folder, edits, message) -> None:
    (folder / "a.txt").write_text("a\nb\nb\nc\n")
    edit, _ = tools(folder)
    done = await call(edit, path="a.txt", edits=edits)
    assert done.is_error and text(done).startswith(message), text(done)
    assert (folder / "a.txt").read_text() == "a\nb\nb\nc\n"


async def test_overlapping_occurrences_are_not_unique(folder) -> None:
    (folder / "a.txt").write_text("aaa\n")
    edit, _ = tools(folder)
    done = await call(edit, path="a.txt", edits=[{"oldText": "aa", "newText": "b"}])
    assert done.is_error and "Found 2 occurrences" in text(done)


async def test_an_unmatched_edit_says_where_its_first_line_is(folder) -> None:
    (folder / "a.py").write_text("def f():\n    return 1\n")
    edit, _ = tools(folder)
    done = await call(edit, path="a.py", edits=[{"oldText": "def f():\n  return 1", "newText": "x"}])
    assert done.is_error and "Its first line occurs at line 1" in text(done)


async def test_crlf_files_keep_crlf_and_a_bom_stays(folder) -> None:
    (folder / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    edit, write = tools(folder)
    done = await call(edit, path="w.txt", edits=[{"oldText": "one\ntwo", "newText": "1\n2\n2.5"}])
    assert not done.is_error, text(done)
    assert (folder / "w.txt").read_bytes() == b"\xef\xbb\xbf1\r\n2\r\n2.5\r\nthree\r\n"
    assert "\r" not in done.details["diff"] and "\ufeff" not in done.details["diff"]
    # write replacing it keeps the BOM and CRLF too (a model writes LF)
    await call(write, path="w.txt", content="new\ncontent\n")
    assert (folder / "w.txt").read_bytes() == b"\xef\xbb\xbfnew\r\ncontent\r\n"


async def test_a_file_mixing_line_endings_keeps_each_lines_own(folder) -> None:
    (folder / "m.txt").write_bytes(b"a\r\nb\nc\r\nd\n")
    edit, _ = tools(folder)
    # the lines an edit adds take the ending of the lines it replaced; the others keep theirs
    assert not (await call(edit, path="m.txt", edits=[{"oldText": "c\n", "newText": "C\nC2\n"},
                                                      {"oldText": "b", "newText": "B"}])).is_error
    assert (folder / "m.txt").read_bytes() == b"a\r\nB\nC\r\nC2\r\nd\n"


async def test_binary_files_directories_fifos_and_missing_files_are_refused(folder) -> None:
    (folder / "b.bin").write_bytes(b"\x00\x01abc")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "dir").mkdir()
    os.mkfifo(folder / "pipe")
    edit, write = tools(folder)
    cases = [
        (edit, dict(path="b.bin", edits=[{"oldText": "abc", "newText": "x"}]), "b.bin is a binary file"),
        (edit, dict(path="latin.txt", edits=[{"oldText": "caf", "newText": "x"}]), "latin.txt is a binary file"),
        (edit, dict(path="dir", edits=[{"oldText": "a", "newText": "x"}]), "dir is a directory; edit changes a file."),
        (write, dict(path="dir", content="x"), "dir is a directory; write changes a file."),
        (edit, dict(path="pipe", edits=[{"oldText": "a", "newText": "x"}]), "pipe is a FIFO; not edited."),
        (write, dict(path="pipe", content="x"), "pipe is a FIFO; not written."),
        (edit, dict(path="gone.txt", edits=[{"oldText": "a", "newText": "x"}]), "No such file: gone.txt."),
    ]
    for tool, args, message in cases:
        assert isinstance(args, dict)
        done = await call(tool, **args)
        assert done.is_error and text(done).startswith(message), (args, text(done))
    assert (folder / "b.bin").read_bytes() == b"\x00\x01abc" and (folder / "dir").is_dir()


async def test_a_link_out_of_the_folder_is_outside_and_print_mode_refuses_it(folder, tmp_path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("secret\n")
    (folder / "link.txt").symlink_to(outside)
    edit, write = make_tools(["edit", "write"], cwd=folder, approve=approve_inside())
    for tool, args in ((edit, dict(path="link.txt", edits=[{"oldText": "secret", "newText": "x"}])),
                       (write, dict(path="link.txt", content="x")),
                       (write, dict(path=str(tmp_path / "new.txt"), content="x")),
                       (write, dict(path="../escape.txt", content="x"))):
        done = await call(tool, **args)
        assert done.is_error and "outside the working folder" in text(done) and "--yes does not allow" in text(done)
    assert outside.read_text() == "secret\n" and not (tmp_path / "new.txt").exists()
    assert not (tmp_path / "escape.txt").exists()
    # inside the folder the same approver says yes; a link inside that stays inside is followed
    (folder / "real.txt").write_text("x\n")
    (folder / "alias.txt").symlink_to(folder / "real.txt")
    assert not (await call(write, path="alias.txt", content="y\n")).is_error
    assert (folder / "real.txt").read_text() == "y\n" and (folder / "alias.txt").is_symlink()


async def test_the_app_is_told_when_a_change_is_outside(folder, tmp_path) -> None:
    asked = Asked()
    _, write = tools(folder, asked)
    await call(write, path=str(tmp_path / "out.txt"), content="x")
    [change] = asked.changes
    assert change.outside and change.real_path == str((tmp_path / "out.txt").resolve())
    assert (tmp_path / "out.txt").read_text() == "x"  # the user said yes


async def test_declined_unapproved_and_refused_changes_write_nothing(folder) -> None:
    (folder / "a.txt").write_text("a\n")
    for approve, message in ((Asked(False), "The user declined this change to a.txt"),
                             (Asked("Not now."), "Not now.")):
        edit, write = tools(folder, approve)
        done = await call(edit, path="a.txt", edits=[{"oldText": "a", "newText": "b"}])
        assert done.is_error and text(done).startswith(message)
        assert (await call(write, path="b.txt", content="x")).is_error
    edit, write = make_tools(["edit", "write"], cwd=folder)  # nobody to ask: print mode without --yes
    done = await call(write, path="b.txt", content="x")
    assert done.is_error and "rerun with --yes" in text(done)
    assert (folder / "a.txt").read_text() == "a\n" and not (folder / "b.txt").exists()


async def test_a_file_changed_while_waiting_for_approval_is_not_written(folder) -> None:
    (folder / "a.txt").write_text("a\n")

    async def meanwhile(change: ProposedChange) -> bool:
        (folder / "a.txt").write_text("edited in the editor\n")
        return True

    edit, _ = make_tools(["edit", "write"], cwd=folder, approve=meanwhile)
    done = await call(edit, path="a.txt", edits=[{"oldText": "a", "newText": "b"}])
    assert done.is_error and "changed while the change was waiting for approval" in text(done)
    assert (folder / "a.txt").read_text() == "edited in the editor\n"


async def test_a_very_large_file_is_refused_and_a_large_one_edited(folder) -> None:
    from treechat.agent.tools.edit import MAX_EDIT_BYTES

    with open(folder / "huge.txt", "wb") as f:  # noqa: ASYNC230  a sparse local temp file: instant
        f.truncate(MAX_EDIT_BYTES + 1)
    edit, _ = tools(folder)
    done = await call(edit, path="huge.txt", edits=[{"oldText": "a", "newText": "b"}])
    assert done.is_error and "edit changes files up to 10.0 MB" in text(done)
    lines = "".join(f"line {i}\n" for i in range(200_000))  # ~2.3 MB: edited; the diff stays small
    (folder / "big.txt").write_text(lines)
    done = await call(edit, path="big.txt", edits=[{"oldText": "line 150000\n", "newText": "changed\n"}])
    assert not done.is_error and done.details["diff"].count("\n") < 20
    assert (folder / "big.txt").read_text() == lines.replace("line 150000\n", "changed\n")


async def test_writing_the_same_content_changes_nothing(folder) -> None:
    (folder / "a.txt").write_text("same\n")
    asked = Asked()
    _, write = tools(folder, asked)
    done = await call(write, path="a.txt", content="same\n")
    assert not done.is_error and "already has this content" in text(done) and not asked.changes


async def test_a_replaced_file_keeps_its_permissions(folder) -> None:
    (folder / "run.sh").write_text("echo 1\n")
    os.chmod(folder / "run.sh", 0o750)
    _, write = tools(folder)
    await call(write, path="run.sh", content="echo 2\n")
    assert (folder / "run.sh").stat().st_mode & 0o777 == 0o750
    assert [p.name for p in folder.iterdir() if "treechat" in p.name] == []  # no temporary file left
