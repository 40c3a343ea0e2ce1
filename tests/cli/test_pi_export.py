"""A JSONL export opens in Pi 0.73.1 at the same leaf with no row Pi cannot show (issue 37), and
treechat opens its own exports at the same leaf, on every backend.

Pi's rules, read from its 0.73.1 source and seen in its `/tree` (SessionManager._buildIndex,
tree-selector.js): the leaf is the file's last entry, whatever its type; entries are linked by
id, in any order; every entry is a row of the tree, and a type it does not know (`leaf`,
`active_tools_change`) is an empty row. `pi_leaf` and `PI_SHOWN` encode them, so this runs
without Pi; tests/fixtures/pi holds files Pi itself wrote and what it built from them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import PI_FIXTURES
from treechat.cli.main import build_parser, catalog_for, main
from treechat.session.session import Session
from treechat.storage.model import TOOLS_RECORD

# the entry types Pi 0.73.1's tree draws a row of text for (tree-selector.js getEntryDisplayText)
PI_SHOWN = {"message", "custom_message", "compaction", "branch_summary", "model_change", "thinking_level_change",
            "custom", "label", "session_info"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def home(request, tmp_path):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # TREECHAT_DATABASE_URL: a fresh database
    return ["--home", str(tmp_path / "home"), "--storage", request.param]


def elsewhere(home: list[str], tmp_path: Path, name: str = "other") -> list[str]:
    return ["--home", str(tmp_path / name), *home[2:]]


def entries_of(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session"
    return lines[1:]


def pi_leaf(entries: list[dict[str, Any]]) -> str | None:
    """Where Pi opens a file: its last entry."""
    return entries[-1]["id"] if entries else None


def assert_pi_opens(entries: list[dict[str, Any]], leaf: str | None) -> None:
    assert pi_leaf(entries) == leaf
    assert {e["type"] for e in entries} <= PI_SHOWN, "a row Pi cannot show"
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    assert all(e["parentId"] is None or e["parentId"] in ids for e in entries)  # every parent is in the file


def tree(capsys, home: list[str], sid: str) -> dict[str, Any]:
    code, out, err = run(capsys, "tree", sid, "--json", *home)
    assert code == 0, err
    return json.loads(out)


def shape(t: dict[str, Any]) -> set[tuple[Any, ...]]:
    """The tree as (id, parent, kind, label), leaf markers aside, the tools record as its meaning."""
    def kind(e: dict[str, Any]) -> str:
        return "tools" if e["type"] == "active_tools_change" or e.get("customType") == TOOLS_RECORD else e["type"]
    return {(e["id"], e["parentId"], kind(e), e["label"]) for e in t["entries"] if e["type"] != "leaf"}


def message(eid: str, parent: str | None, role: str, text: str, ms: int) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "timestamp": ms}
    if role == "user":
        body["content"] = text
    else:
        body.update(content=[{"type": "text", "text": text}], api="openai-completions", provider="openai", model="m",
                    usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                    stopReason="stop")
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-01-01T00:00:{ms % 60:02d}.000Z",
            "message": body}


def branched_file(tmp_path: Path) -> Path:
    """A session treechat wrote: settings first, a tools record, two branches, a label, and a
    leaf marker moving the leaf back to an entry with entries below it."""
    lines = [
        {"type": "session", "version": 3, "id": "22222222-2222-4222-8222-222222222222",
         "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"},
        {"type": "model_change", "id": "b01", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "provider": "openai", "modelId": "m"},
        {"type": "active_tools_change", "id": "b02", "parentId": "b01", "timestamp": "2026-01-01T00:00:02.000Z",
         "activeToolNames": ["read", "ls"]},
        message("b03", "b02", "user", "first question", 3),
        message("b04", "b03", "assistant", "first answer", 4),
        message("b05", "b04", "user", "second question", 5),
        message("b06", "b05", "assistant", "second answer", 6),
        message("b07", "b04", "user", "other branch", 7),
        {"type": "label", "id": "b08", "parentId": "b07", "timestamp": "2026-01-01T00:00:08.000Z",
         "targetId": "b03", "label": "start"},
        {"type": "leaf", "id": "b09", "parentId": "b04", "timestamp": "2026-01-01T00:00:09.000Z", "targetId": "b04"},
    ]
    path = tmp_path / "branched.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def import_one(capsys, home: list[str], path: Path) -> str:
    code, out, err = run(capsys, "import", str(path), *home)
    assert code == 0, err
    return out.strip()


def export(capsys, home: list[str], sid: str, path: Path) -> list[dict[str, Any]]:
    code, _, err = run(capsys, "export", sid, "-o", str(path), *home)
    assert code == 0, err
    return entries_of(path)


async def tools_at_leaf(home: list[str], sid: str) -> list[str] | None:
    async with catalog_for(build_parser().parse_args(["sessions", *home])) as catalog:
        session = await Session.open(await catalog.open(sid))
        return (await session.path_state()).active_tool_names


def test_the_leaf_is_the_last_line_with_no_leaf_entry_and_treechat_reopens_it(capsys, home, tmp_path):
    sid = import_one(capsys, home, branched_file(tmp_path))
    before = tree(capsys, home, sid)
    assert before["leafId"] == "b04"  # below it: b05, b06, b07
    context = run(capsys, "context", sid, "--json", *home)[1]
    written = export(capsys, home, sid, tmp_path / "out.jsonl")
    assert_pi_opens(written, "b04")
    assert not any(e["type"] in ("leaf", "active_tools_change") for e in written)
    record = next(e for e in written if e["id"] == "b02")
    assert record == {"id": "b02", "parentId": "b01", "timestamp": "2026-01-01T00:00:02.000Z", "type": "custom",
                      "customType": TOOLS_RECORD, "activeToolNames": ["read", "ls"]}

    other = elsewhere(home, tmp_path)
    assert import_one(capsys, other, tmp_path / "out.jsonl") == sid
    after = tree(capsys, other, sid)
    assert after["leafId"] == "b04" and shape(after) == shape(before)
    assert run(capsys, "context", sid, "--json", *other)[1] == context
    assert asyncio.run(tools_at_leaf(other, sid)) == ["read", "ls"] == asyncio.run(tools_at_leaf(home, sid))
    # and again: the export of the re-imported session is the same file
    assert export(capsys, other, sid, tmp_path / "again.jsonl") == written


@pytest.mark.parametrize("case", ["large-session.v3", "before-compaction.v3", "treechat-checkpoints"])
def test_a_pi_file_comes_back_out_as_pi_wrote_it(capsys, home, tmp_path, case):
    src = PI_FIXTURES / f"{case}.jsonl"
    expected = json.loads((PI_FIXTURES / f"{case}.expected.json").read_text())
    sid = import_one(capsys, home, src)
    written = export(capsys, home, sid, tmp_path / "out.jsonl")
    assert_pi_opens(written, expected["leafId"])
    assert written == entries_of(src)  # the same entries, in the same order (parsed: key order may differ)


def test_after_moving_the_leaf_in_treechat_pi_opens_there(capsys, home, tmp_path):
    sid = import_one(capsys, home, PI_FIXTURES / "before-compaction.v3.jsonl")
    earlier = tree(capsys, home, sid)["entries"][40]["id"]

    async def move() -> None:
        async with catalog_for(build_parser().parse_args(["sessions", *home])) as catalog:
            await (await Session.open(await catalog.open(sid))).move_to(earlier)

    asyncio.run(move())
    written = export(capsys, home, sid, tmp_path / "moved.jsonl")
    assert_pi_opens(written, earlier)
    assert len(written) == len(entries_of(PI_FIXTURES / "before-compaction.v3.jsonl"))
    other = elsewhere(home, tmp_path)
    import_one(capsys, other, tmp_path / "moved.jsonl")
    assert tree(capsys, other, sid)["leafId"] == earlier


def test_a_leaf_before_the_first_entry_ends_the_file_with_its_first_root(capsys, home, tmp_path):
    sid = import_one(capsys, home, branched_file(tmp_path))

    async def reset() -> None:
        async with catalog_for(build_parser().parse_args(["sessions", *home])) as catalog:
            await (await Session.open(await catalog.open(sid))).move_to(None)

    asyncio.run(reset())
    written = export(capsys, home, sid, tmp_path / "start.jsonl")
    assert_pi_opens(written, "b01")  # the model setting: Pi's context is as empty as ours
    context = json.loads(run(capsys, "context", sid, "--leaf", "b01", "--json", *home)[1])
    assert context["messages"] == []
