"""The command line with a PostgreSQL server: choosing it (config.toml, --storage), moving history
there (`copy`), the password never shown or written, and one line when something is missing.
(Import into postgres, and Pi's context after it, run in test_cli_import.py and
test_cli_files.py with the other backends.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.cli.main import main

from ..faults.helpers import env
from ..pg_cluster import PASSWORD
from ..storage.helpers import append_all, assistant, label, user


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def _sqlite_home(home: Path) -> list[str]:
    """A SQLite home with two sessions (a fork of the first among them) and an empty one."""
    from treechat.storage import open_catalog

    catalog = await open_catalog("sqlite", home)
    try:
        s = await catalog.create(session_id="sess-one", cwd="/w")
        await append_all(s, user("u1", None, "the first question"), assistant("a1", "u1", "its answer"),
                         user("u2", "a1"), assistant("a2", "u2"), label("l1", "a2", "u1", "start"))
        await s.set_leaf_id("a1")
        fork = await catalog.fork("sess-one", "u2")
        await catalog.create(session_id="empty-one")
        return ["sess-one", fork.session_id]
    finally:
        await catalog.close()


def test_copy_sqlite_to_postgres_is_whole_and_idempotent(capsys, pg_database, tmp_path):
    home = tmp_path / "home"
    ids = asyncio.run(_sqlite_home(home))
    base = ["--home", str(home)]
    code, out, err = run(capsys, "copy", "--from", "sqlite", "--to", "postgres", *base)
    assert code == 0, err
    assert sorted(out.split()) == sorted(ids) and "copied 2 sessions" in err  # the empty one is not
    for sid in ids:  # the same tree, leaf, labels and context on both
        for what in (["tree", sid, "--json"], ["context", sid, "--json"]):
            assert run(capsys, *what, *base, "--storage", "postgres")[1] == run(capsys, *what, *base)[1]
    listed = {r["id"]: r for r in json.loads(run(capsys, "sessions", "--json", *base, "--storage", "postgres")[1])}
    assert listed[ids[1]]["parentSessionId"] == "sess-one" and listed["sess-one"]["entryCount"] == 5
    # again: nothing copied twice
    code, out, err = run(capsys, "copy", "--from", "sqlite", "--to", "postgres", *base)
    assert code == 0 and "copied 0 sessions" in err and "2 already there" in err
    # the source grew since: said so; --force brings it over
    asyncio.run(_append_later(home))
    err = run(capsys, "copy", "--from", "sqlite", "--to", "postgres", *base)[2]
    assert "sess-one has 1 more" in err
    err = run(capsys, "copy", "--from", "sqlite", "--to", "postgres", "sess", "--force", *base)[2]
    assert "copied 1 session" in err
    assert "written after the copy" in run(capsys, "tree", "sess-one", "--json", *base, "--storage", "postgres")[1]
    # and back into another store, fork origin and all
    assert run(capsys, "copy", "--from", "postgres", "--to", "jsonl", *base)[0] == 0
    back = {r["id"]: r for r in json.loads(run(capsys, "sessions", "--json", *base, "--storage", "jsonl")[1])}
    assert back[ids[1]]["parentSessionId"] == "sess-one"


async def _append_later(home: Path) -> None:
    from treechat.storage import open_catalog

    catalog = await open_catalog("sqlite", home)
    await (await catalog.open("sess-one")).append_entry(user("u3", "a1", "written after the copy"))
    await catalog.close()


def test_copy_refuses_one_store_to_itself(capsys, tmp_path):
    code, _, err = run(capsys, "copy", "--from", "sqlite", "--to", "sqlite", "--home", str(tmp_path))
    assert code == 1 and "both sqlite" in err and err.count("\n") == 1


def test_config_toml_chooses_postgres_and_a_bad_url_there_is_one_line(capsys, pg_database, monkeypatch, tmp_path):
    monkeypatch.delenv("TREECHAT_DATABASE_URL")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'storage = "postgres"\ndatabase_url = "{pg_database.url}"\n')
    code, out, err = run(capsys, "sessions", "--home", str(home))
    assert code == 0 and "No sessions yet" in out, err
    assert not (home / "treechat.db").exists()  # the store is the server's
    (home / "config.toml").write_text('storage = "postgres"\ndatabase_url = "mysql://me:hunter2@db/x"\n')
    code, out, err = run(capsys, "sessions", "--home", str(home))
    assert code == 1 and "line 2: database_url must start with postgresql://" in err and "hunter2" not in err
    (home / "config.toml").write_text('storage = "postgres"\n')
    code, _, err = run(capsys, "sessions", "--home", str(home))
    assert code == 1 and "needs a server: set TREECHAT_DATABASE_URL" in err


def test_the_password_is_never_printed_logged_or_written_to_the_home(capsys, pg_server, pg_database, monkeypatch,
                                                                      tmp_path):
    if not pg_server.own:
        pytest.skip("needs the throw-away cluster (a password login over TCP)")
    url = pg_server.tcp_url(pg_database.name)
    assert PASSWORD in url
    monkeypatch.setenv("TREECHAT_DATABASE_URL", url)
    home = tmp_path / "home"
    pi = tmp_path / "pi.jsonl"
    pi.write_text('{"type":"session","version":3,"id":"pw-session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
                  '{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
                  '"message":{"role":"user","content":"hello there","timestamp":1}}\n')
    base = ["--home", str(home), "--storage", "postgres"]
    said = []
    for argv in (["import", str(pi)], ["sessions"], ["sessions", "--json"], ["search", "hello"], ["tree", "pw-session"],
                 ["context", "pw-session", "--json"], ["doctor"], ["doctor", "--json"], ["reindex"],
                 ["copy", "--from", "postgres", "--to", "sqlite"]):
        code, out, err = run(capsys, *argv, *base)
        said.append(out + err)
    assert "postgresql://treechat_test:***@127.0.0.1" in said[6]  # doctor shows the URL, with ***
    # a server that does not answer, a wrong database: the error lines hold no password either
    for broken in (url.replace(str(pg_server.port), "1"), url.replace(pg_database.name, "no_such_db")):
        monkeypatch.setenv("TREECHAT_DATABASE_URL", broken)
        for argv in (["sessions"], ["doctor"]):
            code, out, err = run(capsys, *argv, *base)
            said.append(out + err)
            assert code == 1
    assert not any(PASSWORD in text for text in said)
    for path in home.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_without_the_driver_postgres_is_one_line_saying_what_to_install(tmp_path):
    code = ("import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
            "from treechat.cli.main import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "--home", str(tmp_path), "--storage", "postgres", "sessions"],
                          capture_output=True, text=True, timeout=60,
                          env={**env(), "TREECHAT_DATABASE_URL": "postgresql://me@127.0.0.1/db"})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "treechat: PostgreSQL storage needs its driver (psycopg is not installed): pip install 'treechat[postgres]'"]
