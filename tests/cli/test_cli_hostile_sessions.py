"""Session files in the JSONL folder that hold parent cycles, a self-parent or a leaf marker
naming nothing (issue 15, item 7): every command and the app open them, build a context, say on one
line what was set aside, and leave the file as it is."""

from __future__ import annotations

import json
from pathlib import Path

from treechat.cli.main import main

SID = "aaaaaaaa-0000-4000-8000-000000000002"


def message(entry_id: str, parent: str | None, text: str) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1}}


def hostile_file(home: Path, *, last: str = "s") -> Path:
    folder = home / "sessions"
    folder.mkdir(parents=True)
    rows = [{"type": "session", "version": 3, "id": SID, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(home)},
            message("a", None, "root"), message("b", "c", "in a cycle"), message("c", "b", "in the cycle too"),
            message("s", "s", "its own parent")]
    if last == "marker":
        rows.append({"type": "leaf", "id": "m1", "parentId": "s", "targetId": "ghost",
                     "timestamp": "2026-01-01T00:00:02.000Z"})
    path = folder / f"2026-01-01T00-00-00-000Z_{SID}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_every_command_opens_a_session_with_cycles_and_says_what_it_set_aside(tmp_path, capsys) -> None:
    path = hostile_file(tmp_path, last="marker")
    before = path.read_bytes()
    home = ["--home", str(tmp_path), "--storage", "jsonl"]
    for argv in (["context", SID, "--json"], ["tree", SID, "--json"], ["export", SID, "--format", "md"]):
        code = main([*argv, *home])
        out, err = capsys.readouterr()
        assert code == 0, err
        (line,) = err.splitlines()
        assert line.startswith("treechat: warning: ") and "2 parent cycles broken" in line, line
        assert "left as it is" in line and "Traceback" not in err
    code = main(["context", SID, "--json", *home])
    ctx = json.loads(capsys.readouterr().out)
    assert code == 0 and [m["content"] for m in ctx["messages"]] == ["its own parent"]  # s: now a root, the leaf
    assert path.read_bytes() == before
