"""The command line on real Pi files: import, context, tree, export round trip, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures import PI_FIXTURES
from treechat.cli.main import main
from treechat.storage import BACKENDS

FIXTURES = PI_FIXTURES
CASES = ["large-session", "before-compaction", "large-session.v3", "before-compaction.v3"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def persistent_backends() -> list[str]:
    return [b for b in BACKENDS if b != "memory"]


@pytest.fixture(params=persistent_backends())
def home(request, tmp_path):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # TREECHAT_DATABASE_URL: a fresh database
    return ["--home", str(tmp_path), "--storage", request.param]


def elsewhere(home: list[str], tmp_path: Path) -> list[str]:
    """The same backend in a second home (on PostgreSQL the same server: another machine)."""
    return ["--home", str(tmp_path / "other"), *home[2:]]


def import_one(capsys, home, path: Path) -> str:
    code, out, err = run(capsys, "import", str(path), *home)
    assert code == 0, err
    return out.strip()


@pytest.mark.parametrize("case", CASES)
def test_import_then_context_matches_pi(capsys, home, case):
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    sid = import_one(capsys, home, FIXTURES / f"{case}.jsonl")
    code, out, err = run(capsys, "context", sid, "--json", *home)
    assert code == 0, err
    ctx = json.loads(out)
    assert ctx["messages"] == expected["context"]["messages"]
    assert ctx["thinkingLevel"] == expected["context"]["thinkingLevel"]
    assert ctx["model"] == expected["context"]["model"]


def test_before_compaction_starts_with_the_summary(capsys, home):
    sid = import_one(capsys, home, FIXTURES / "before-compaction.jsonl")
    ctx = json.loads(run(capsys, "context", sid, "--json", *home)[1])
    assert len(ctx["messages"]) == 446
    assert ctx["messages"][0]["role"] == "compactionSummary"


def test_tree_of_v3_file_matches_pi_ids_and_order(capsys, home):
    expected = json.loads((FIXTURES / "before-compaction.v3.expected.json").read_text())
    sid = import_one(capsys, home, FIXTURES / "before-compaction.v3.jsonl")
    code, out, _ = run(capsys, "tree", sid, "--json", *home)
    tree = json.loads(out)
    assert tree["leafId"] == expected["leafId"]
    got = [(e["id"], e["parentId"], e["type"]) for e in tree["entries"]]
    assert sorted(got) == sorted((n["id"], n["parentId"], n["type"]) for n in expected["tree"])
    assert all("label" in e for e in tree["entries"])


def test_export_jsonl_round_trip_keeps_tree_leaf_and_context(capsys, home, tmp_path):
    sid = import_one(capsys, home, FIXTURES / "before-compaction.v3.jsonl")
    before_ctx = json.loads(run(capsys, "context", sid, "--json", *home)[1])
    before_tree = json.loads(run(capsys, "tree", sid, "--json", *home)[1])
    out_file = tmp_path / "x.jsonl"
    code, _, err = run(capsys, "export", sid, "--format", "jsonl", "-o", str(out_file), *home)
    assert code == 0, err
    first = json.loads(out_file.read_text().splitlines()[0])
    assert first["type"] == "session" and first["version"] == 3
    other = elsewhere(home, tmp_path)
    sid2 = import_one(capsys, other, out_file)
    assert sid2 == sid  # the session keeps its id
    assert json.loads(run(capsys, "context", sid2, "--json", *other)[1]) == before_ctx
    after_tree = json.loads(run(capsys, "tree", sid2, "--json", *other)[1])
    assert after_tree["leafId"] == before_tree["leafId"]
    assert after_tree["entries"] == before_tree["entries"]


def test_export_after_moving_the_leaf_reopens_at_that_leaf(capsys, home, tmp_path):
    sid = import_one(capsys, home, FIXTURES / "large-session.v3.jsonl")
    tree = json.loads(run(capsys, "tree", sid, "--json", *home)[1])
    earlier = tree["entries"][10]["id"]
    # context at an earlier leaf, then move there via the Session API and export
    import asyncio

    from treechat.cli.main import build_parser, catalog_for
    from treechat.session.session import Session

    async def move():
        args = build_parser().parse_args(["sessions", *home])
        async with catalog_for(args) as catalog:
            s = await Session.open(await catalog.open(sid))
            await s.move_to(earlier)

    asyncio.run(move())
    want = json.loads(run(capsys, "context", sid, "--json", *home)[1])
    assert want == json.loads(run(capsys, "context", sid, "--leaf", earlier, "--json", *home)[1])
    out_file = tmp_path / "moved.jsonl"
    assert run(capsys, "export", sid, "-o", str(out_file), *home)[0] == 0
    other = elsewhere(home, tmp_path)
    sid2 = import_one(capsys, other, out_file)
    assert json.loads(run(capsys, "context", sid2, "--json", *other)[1]) == want


def test_markdown_export(capsys, home):
    sid = import_one(capsys, home, FIXTURES / "before-compaction.v3.jsonl")
    code, out, _ = run(capsys, "export", sid, "--format", "md", *home)
    assert code == 0
    assert out.startswith("# ") and "## Summary of earlier conversation" in out and "## User" in out


def test_garbage_line_imports_everything_else_with_one_warning(capsys, home, tmp_path):
    lines = (FIXTURES / "large-session.v3.jsonl").read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], lines[1], "{not json at all", *lines[2:]]) + "\n")
    code, out, err = run(capsys, "import", str(broken), *home)
    assert code == 0
    assert len(err.strip().splitlines()) == 1 and "skipped 1" in err
    sid = out.strip()
    ctx = json.loads(run(capsys, "context", sid, "--json", *home)[1])
    assert len(ctx["messages"]) == 914


def test_unknown_leaf_is_one_line_naming_it(capsys, home):
    sid = import_one(capsys, home, FIXTURES / "large-session.v3.jsonl")
    code, out, err = run(capsys, "context", sid, "--leaf", "nosuchid", "--json", *home)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "nosuchid" in err and "Traceback" not in err


def test_leaf_null_is_the_empty_context(capsys, home):
    sid = import_one(capsys, home, FIXTURES / "large-session.v3.jsonl")
    ctx = json.loads(run(capsys, "context", sid, "--leaf", "null", "--json", *home)[1])
    assert ctx["messages"] == [] and ctx["thinkingLevel"] == "off" and ctx["model"] is None


@pytest.mark.parametrize("argv", [
    ["context", "nosuchsession", "--json"],
    ["import", "/nonexistent/file.jsonl"],
    ["export", "nosuchsession"],
])
def test_errors_are_one_line_without_traceback(capsys, home, argv):
    code, _, err = run(capsys, *argv, *home)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_sessions_json_lists_imported(capsys, home):
    sid = import_one(capsys, home, FIXTURES / "large-session.v3.jsonl")
    rows = json.loads(run(capsys, "sessions", "--json", *home)[1])
    row = next(r for r in rows if r["id"] == sid)
    assert row["messageCount"] == 914
    for key in ("name", "created", "modified", "totalTokens", "cost"):
        assert key in row


def test_home_from_environment(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TREECHAT_HOME", str(tmp_path / "h"))
    sid = import_one(capsys, [], FIXTURES / "large-session.v3.jsonl")
    rows = json.loads(run(capsys, "sessions", "--json")[1])
    assert [r["id"] for r in rows] == [sid]


def test_sessions_never_lists_an_empty_session(tmp_path, capsys) -> None:
    import asyncio

    from treechat.cli.main import main
    from treechat.storage import open_catalog

    async def make_empty() -> str:
        catalog = await open_catalog("sqlite", tmp_path)
        try:
            return (await catalog.create()).session_id
        finally:
            await catalog.close()

    empty = asyncio.run(make_empty())
    assert main(["--home", str(tmp_path), "sessions", "--json"]) == 0
    assert empty not in capsys.readouterr().out
