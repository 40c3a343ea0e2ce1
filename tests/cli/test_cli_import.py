"""`treechat import PATH…`: folders of Pi sessions, --from-pi, re-imports, --force, the summary
line, and the streamed `tree --json` / `export` of what was imported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures import PI_FIXTURES
from treechat.cli.main import main

FIXTURES = PI_FIXTURES


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def home(request, tmp_path):
    if request.param == "postgres":
        request.getfixturevalue("pg_database")  # TREECHAT_DATABASE_URL: a fresh database
    return ["--home", str(tmp_path / "home"), "--storage", request.param]


def pi_folder(root: Path) -> Path:
    """Pi's layout: sessions/--cwd--/<ts>_<id>.jsonl, plus things that are not sessions."""
    a = root / "sessions" / "--work-a--"
    b = root / "sessions" / "--work-b--" / "deeper"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    shutil.copy(FIXTURES / "large-session.v3.jsonl", a / "2026-01-01T00-00-00-000Z_one.jsonl")
    shutil.copy(FIXTURES / "before-compaction.v3.jsonl", b / "2026-01-02T00-00-00-000Z_two.jsonl")
    v1 = (FIXTURES / "large-session.jsonl").read_text().splitlines()  # v1: migrated on import
    head = {**json.loads(v1[0]), "id": "old-v1-session"}  # the v3 fixture is this session, migrated
    (b / "old-v1.jsonl").write_text("\n".join([json.dumps(head), *v1[1:]]) + "\n")
    (a / "notes.jsonl").write_text('{"hello": "not a session"}\n')
    (a / "README.txt").write_text("ignored: not *.jsonl")
    return root / "sessions"


def test_a_folder_tree_imports_in_one_command_and_reimports_nothing(capsys, home, tmp_path):
    folder = pi_folder(tmp_path / "pi")
    code, out, err = run(capsys, "import", str(folder), *home)
    assert code == 0, err
    ids = out.split()
    assert len(ids) == 3 and len(set(ids)) == 3
    (line,) = err.strip().splitlines()
    assert "imported 3 sessions" in line and "1 file not a session" in line and "Traceback" not in line
    rows = json.loads(run(capsys, "sessions", "--json", *home)[1])
    assert sorted(r["id"] for r in rows) == sorted(ids)

    code, out, err = run(capsys, "import", str(folder), *home)
    assert code == 0
    assert "imported 0 sessions" in err and "3 already imported" in err
    assert len(json.loads(run(capsys, "sessions", "--json", *home)[1])) == 3


def test_the_pi_session_id_is_kept_and_force_replaces(capsys, home, tmp_path):
    src = FIXTURES / "before-compaction.v3.jsonl"
    header = json.loads(src.read_text().splitlines()[0])
    code, out, _ = run(capsys, "import", str(src), *home)
    assert code == 0 and out.strip() == header["id"]
    # the same session, grown by one entry in Pi: skipped without --force, replaced with it
    grown = tmp_path / "grown.jsonl"
    lines = src.read_text().splitlines()
    last = json.loads(lines[-1])
    extra = {"type": "message", "id": "feedbeef", "parentId": last["id"], "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": "one more", "timestamp": 1}}
    grown.write_text("\n".join([*lines, json.dumps(extra)]) + "\n")
    code, _, err = run(capsys, "import", str(grown), *home)
    assert code == 0 and "already imported" in err
    assert "changed in Pi since: grown.jsonl has 1 more entries (--force re-imports" in err  # not skipped silently
    assert "feedbeef" not in run(capsys, "tree", header["id"], "--json", *home)[1]
    assert "changed in Pi" not in run(capsys, "import", str(src), *home)[2]  # the same file: nothing to say
    code, out, err = run(capsys, "import", "--force", str(grown), str(src), *home)  # one session, two files
    assert code == 0 and "imported 1 session " in err
    code, out, err = run(capsys, "import", "--force", str(grown), *home)
    assert code == 0 and "imported 1 session" in err and out.strip() == header["id"]
    tree = json.loads(run(capsys, "tree", header["id"], "--json", *home)[1])
    assert tree["leafId"] == "feedbeef"
    assert len(json.loads(run(capsys, "sessions", "--json", *home)[1])) == 1


def test_from_pi_finds_the_agent_folder(capsys, home, tmp_path, monkeypatch):
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    pi_folder(tmp_path / "agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = run(capsys, "import", "--from-pi", *home)
    assert code == 0, err
    assert len(out.split()) == 3


@pytest.mark.parametrize("how", ["settings.json", "environment"])
def test_from_pi_follows_pi_s_own_session_folder_setting(capsys, home, tmp_path, monkeypatch, how):
    """Pi 0.73 reads PI_CODING_AGENT_SESSION_DIR, then `sessionDir` in its settings.json."""
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.setenv("HOME", str(tmp_path))
    pi_folder(tmp_path / "elsewhere")  # makes tmp_path/elsewhere/sessions
    if how == "settings.json":
        (agent / "settings.json").write_text(json.dumps({"sessionDir": "~/elsewhere/sessions", "theme": "dark"}))
    else:
        monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "elsewhere" / "sessions"))
    code, out, err = run(capsys, "import", "--from-pi", *home)
    assert code == 0, err
    assert len(out.split()) == 3


def test_from_pi_without_a_pi_folder_is_one_line(capsys, home, tmp_path, monkeypatch):
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "nowhere"))
    code, _, err = run(capsys, "import", "--from-pi", *home)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "PI_CODING_AGENT_DIR" in err


def test_failures_are_counted_with_reasons_and_the_rest_imports(capsys, home, tmp_path):
    good = tmp_path / "good.jsonl"
    shutil.copy(FIXTURES / "large-session.v3.jsonl", good)
    unreadable = tmp_path / "locked.jsonl"
    unreadable.write_text("x")
    unreadable.chmod(0)
    try:
        code, out, err = run(capsys, "import", str(good), str(tmp_path / "missing.jsonl"), str(unreadable), *home)
    finally:
        unreadable.chmod(0o600)
    (line,) = err.strip().splitlines()
    assert "imported 1 session" in line and "missing.jsonl: does not exist" in line
    assert code == 1 and len(out.split()) == 1


def test_no_paths_is_one_line(capsys, home):
    code, _, err = run(capsys, "import", *home)
    assert code == 1 and "--from-pi" in err and len(err.strip().splitlines()) == 1


def test_deeply_nested_lines_are_skipped_not_fatal(capsys, home, tmp_path):
    lines = (FIXTURES / "large-session.v3.jsonl").read_text().splitlines()
    deep = '{"type":"custom","id":"deep","parentId":null,"customType":"x","data":' + "[" * 5000 + "]" * 5000 + "}"
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([lines[0], deep, *lines[1:]]) + "\n")
    code, out, err = run(capsys, "import", str(path), *home)
    assert code == 0 and "skipped 1 unreadable line" in err and "nested too deeply" in err
    ctx = json.loads(run(capsys, "context", out.strip(), "--json", *home)[1])
    assert len(ctx["messages"]) == 914


def test_export_to_stdout_streams_the_same_file_as_to_a_path(capsys, home, tmp_path):
    sid = run(capsys, "import", str(FIXTURES / "before-compaction.v3.jsonl"), *home)[1].strip()
    code, streamed, _ = run(capsys, "export", sid, *home)
    assert code == 0
    out = tmp_path / "x.jsonl"
    assert run(capsys, "export", sid, "-o", str(out), *home)[0] == 0
    assert [json.loads(x) for x in streamed.splitlines()] == [json.loads(x) for x in out.read_text().splitlines()]
    assert len(streamed.splitlines()) == 1 + json.loads(run(capsys, "sessions", "--json", *home)[1])[0]["entryCount"]
    assert not list(tmp_path.glob(".x.jsonl.*"))  # no temporary file left


def test_a_line_only_pydantic_refuses_is_skipped_and_the_rest_imports(capsys, home, tmp_path):
    # Clean files are read without pydantic and validated while they are stored; a message without
    # content gets through that quick read, so the import starts over validating, and skips it.
    lines = (FIXTURES / "large-session.v3.jsonl").read_text().splitlines()
    bad = json.dumps({"type": "message", "id": "nocontent", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                      "message": {"role": "user"}})
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], bad, *lines[1:]]) + "\n")
    code, out, err = run(capsys, "import", str(path), *home)
    assert code == 0, err
    (line,) = err.strip().splitlines()
    assert "imported 1 session" in line and "skipped 1 unreadable line" in line and "message.content" in line
    ctx = json.loads(run(capsys, "context", out.strip(), "--json", *home)[1])
    assert len(ctx["messages"]) == 914
    assert "nocontent" not in run(capsys, "tree", out.strip(), "--json", *home)[1]


def test_reindex_rebuilds_the_search_index_with_progress_on_a_terminal(capsys, home, tmp_path, monkeypatch):
    import io

    from treechat import progress
    from treechat.cli import storage as cli_storage

    drawn = io.StringIO()
    monkeypatch.setattr(cli_storage, "progress", lambda *a, **kw: progress.progress(*a, **kw, stream=drawn, force=True))
    code, out, err = run(capsys, "import", str(FIXTURES / "large-session.v3.jsonl"), *home)
    assert code == 0, err
    found = run(capsys, "search", "theme", "--json", *home)[1]
    code, out, err = run(capsys, "reindex", *home)
    assert code == 0 and err == "" and "Traceback" not in out
    if "sqlite" in home or "postgres" in home:  # both keep a search index (derived from the entries)
        assert out.startswith("Search index rebuilt: ") and " of 1,0" in out  # 1,0xx entries read
        assert "Rebuilding the search index" in drawn.getvalue()
    else:
        assert out.startswith("Nothing to rebuild")
    assert run(capsys, "search", "theme", "--json", *home)[1] == found and json.loads(found)


def test_a_file_that_trips_an_unexpected_error_is_one_failure_and_the_folder_imports_on(capsys, home, tmp_path,
                                                                                       monkeypatch):
    """Whatever goes wrong with one file (here a bug simulated in the reader), the others import
    and the summary line says which file failed and why; never a traceback half-way."""
    from treechat.cli import storage as cli_storage

    folder = pi_folder(tmp_path / "pi")

    def flaky(real):
        def read(path, **kw):
            if "one" in Path(path).name:
                raise TypeError("'int' object is not iterable")
            return real(path, **kw)
        return read

    # the whole-file reader, and the first pass of SQLite's streamed import
    for name in ("read_records", "plan_file"):  # (the names cli/storage.py imported)
        monkeypatch.setattr(cli_storage, name, flaky(vars(cli_storage)[name]))
    code, out, err = run(capsys, "import", str(folder), *home)
    (line,) = err.strip().splitlines()
    assert code == 1 and "Traceback" not in err
    assert "imported 2 sessions" in line and "1 failed" in line and "TypeError" in line and "_one.jsonl" in line
    assert len(out.split()) == 2


def test_the_summary_names_the_files_lines_were_skipped_in(capsys, home, tmp_path):
    folder = tmp_path / "damaged"
    folder.mkdir()
    for name, source in (("a.jsonl", "large-session.v3.jsonl"), ("b.jsonl", "before-compaction.v3.jsonl")):
        lines = (FIXTURES / source).read_text().splitlines()
        lines.insert(5, "not json at all")
        (folder / name).write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "import", str(folder), *home)
    (line,) = err.strip().splitlines()
    assert code == 0 and "skipped 2 unreadable line(s) in a.jsonl, b.jsonl (first: a.jsonl line 6" in line, line
