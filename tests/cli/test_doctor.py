"""`treechat doctor`: every fact against a temporary home, no network (local servers are closed
loopback ports or a real loopback server started here), and never a key on the screen."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from treechat.cli.main import main
from treechat.doctor.checks import run_doctor
from treechat.doctor.terminal import identify, terminal_checks
from treechat.storage import open_catalog
from treechat.storage.sqlite.db import SCHEMA_VERSION

from .conftest import closed_port

KEY = "sk-doctor-SECRET-0123456789abcdef"
CONFIG_KEY = "cfg-SECRET-key-9876543210"


def report(home: Path, servers: Any, env: dict[str, str] | None = None, *, as_json: bool = False,
           model: str | None = None, tmux: Any = None) -> tuple[int, str]:
    out = io.StringIO()
    env = {"TERM": "xterm-256color", **(env or {})}
    code = asyncio.run(run_doctor(str(home), model=model, as_json=as_json, out=out, env=env, servers=servers,
                                  encoding="utf-8", tmux=tmux or (lambda option: None)))
    return code, out.getvalue()


def by_id(text: str) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(text)["checks"]}


def test_fresh_home_without_config_changes_nothing_and_says_what_is_missing(tmp_path, quiet_servers):
    home = tmp_path / "never-used"
    code, text = report(home, quiet_servers)
    assert code == 1  # no key, no local server: nothing can answer
    assert not home.exists(), "the doctor must not create the data folder"
    assert "defaults in use" in text and "created on first run" in text
    assert "✗ model" in text and "no model can be used" in text
    assert "→ export OPENAI_API_KEY=" in text  # each problem says what to do
    assert "none answering" in text and "ollama :" in text
    for section in ("Install", "Files", "Models", "Terminal"):
        assert f"\n{section}\n" in f"\n{text}"
    # aligned: a mark in column 3, the label padded to the longest one ("JSONL sessions"), then the detail
    facts = [line for line in text.splitlines() if line[:3].strip() in ("✓", "✗", "!", "·")]
    assert len(facts) > 12
    for line in facts:
        assert line[2] in "✓✗!·" and line[3] == " " and line[4:20].rstrip() and line[18:20] == "  " and line[20] != " ", line


def test_a_key_in_the_environment_or_config_is_never_shown(tmp_path, quiet_servers):
    (tmp_path / "config.toml").write_text(
        'model = "openai/gpt-4.1-mini"\n\n[providers.mine]\nbase_url = "https://user:pw@llm.example/v1?token=abc"\n'
        f'api_key = "{CONFIG_KEY}"\nmodels = ["m1"]\n', "utf-8")
    (tmp_path / "config.toml").chmod(0o600)
    env = {"OPENAI_API_KEY": KEY}
    code, text = report(tmp_path, quiet_servers, env)
    code_json, as_json = report(tmp_path, quiet_servers, env, as_json=True)
    assert code == code_json == 0
    for shown in (text, as_json):
        for secret in (KEY, CONFIG_KEY):
            for part in (secret, secret[:8], secret[-8:]):
                assert part not in shown
        assert "pw@" not in shown and "token=abc" not in shown
    checks = by_id(as_json)
    assert checks["provider.openai"]["status"] == "ok" and checks["provider.openai"]["data"]["key_from"] == "OPENAI_API_KEY"
    assert checks["provider.mine"]["data"] == {"base_url": "https://llm.example/v1", "key": True,
                                               "key_from": "api_key in config.toml", "api": "openai"}
    assert checks["provider.anthropic"]["status"] == "info"
    assert checks["model"]["status"] == "ok" and checks["model"]["data"]["ref"] == "openai/gpt-4.1-mini"
    assert checks["config"]["status"] == "ok"


def test_the_report_says_which_api_each_provider_and_the_model_use(tmp_path, quiet_servers):
    (tmp_path / "config.toml").write_text('model = "openai/gpt-5.3-codex"\n\n[providers.gateway]\n'
                                          'base_url = "https://gateway.example/v1"\napi = "openai-responses"\n'
                                          'models = ["m1"]\n', "utf-8")
    code, text = report(tmp_path, quiet_servers, {"OPENAI_API_KEY": KEY})
    lines = {line.split()[1]: line for line in text.splitlines() if line.strip()[:1] in "✓·!✗" and len(line.split()) > 1}
    assert "api openai-responses" in lines["model"]
    assert "api openai; openai-responses for gpt-5.3-codex and 4 more" in lines["openai"]
    assert lines["gateway"].endswith("api openai-responses") and lines["anthropic"].endswith("api anthropic")
    checks = by_id(report(tmp_path, quiet_servers, {"OPENAI_API_KEY": KEY}, as_json=True)[1])
    assert checks["model"]["data"]["api"] == "openai-responses"
    assert checks["provider.openai"]["data"]["api"] == "openai"
    assert checks["provider.openai"]["data"]["model_apis"]["gpt-5.2-codex"] == "openai-responses"


def test_a_readable_config_holding_a_key_is_a_warning(tmp_path, quiet_servers):
    path = tmp_path / "config.toml"
    path.write_text(f'[providers.openai]\napi_key = "{CONFIG_KEY}"\n', "utf-8")
    path.chmod(0o644)
    code, text = report(tmp_path, quiet_servers, as_json=True)
    check = by_id(text)["config"]
    assert check["status"] == "warn" and check["fix"] == f"chmod 600 {path}"
    assert CONFIG_KEY not in text


def test_a_broken_config_is_one_line_and_the_rest_of_the_report_follows(tmp_path, quiet_servers):
    (tmp_path / "config.toml").write_text('model = "openai/gpt-4.1-mini"\nmodle = "x"\n', "utf-8")
    code, text = report(tmp_path, quiet_servers, {"OPENAI_API_KEY": KEY})
    assert code == 1
    lines = [line for line in text.splitlines() if "modle" in line]
    assert len(lines) == 1 and "line 2" in lines[0] and "did you mean 'model'" in lines[0] and lines[0].lstrip().startswith("✗")
    assert "treechat will not start until the file parses" in text
    assert "Terminal" in text and "✓ openai" in text  # keys from the environment are still checked
    assert KEY not in text


def test_a_toml_syntax_error_is_reported_too(tmp_path, quiet_servers):
    (tmp_path / "config.toml").write_text('model = "openai/x\n', "utf-8")
    code, text = report(tmp_path, quiet_servers, as_json=True)
    checks = by_id(text)
    assert code == 1 and checks["config"]["status"] == "fail" and checks["config"]["data"]["parsed"] is False
    assert "TOML" in checks["config"]["detail"] and "\n" not in checks["config"]["detail"]


async def _make_db(home: Path) -> None:
    """One session with a message and one empty one (an app opened and closed: not counted)."""
    from treechat.storage.model import MessageEntry, UserMessage

    catalog = await open_catalog("sqlite", home)
    storage = await catalog.create(cwd=str(home))
    await storage.append_entry(MessageEntry(id="m1", parent_id=None, message=UserMessage(content="hi")))
    await catalog.create(cwd=str(home))
    await catalog.close()


def test_database_schema_version_current_older_and_newer(tmp_path, quiet_servers):
    asyncio.run(_make_db(tmp_path))
    db = tmp_path / "treechat.db"
    check = by_id(report(tmp_path, quiet_servers, as_json=True)[1])["database"]
    assert check["status"] == "ok" and check["data"]["schema_version"] == SCHEMA_VERSION == check["data"]["current_version"]
    assert check["data"]["sessions"] == 1 and "(current)" in check["detail"]

    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    check = by_id(report(tmp_path, quiet_servers, as_json=True)[1])["database"]
    assert check["status"] == "info" and f"upgraded to v{SCHEMA_VERSION}" in check["detail"]

    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    code, text = report(tmp_path, quiet_servers, as_json=True)
    check = by_id(text)["database"]
    assert code == 1 and check["status"] == "fail" and "upgrade treechat" in check["fix"]
    with sqlite3.connect(db) as conn:  # the doctor only read it
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def test_jsonl_sessions_folder_is_counted(tmp_path, quiet_servers):
    (tmp_path / "sessions").mkdir()
    for name in ("a.jsonl", "b.jsonl", "notes.txt"):
        (tmp_path / "sessions" / name).write_text("{}\n")
    check = by_id(report(tmp_path, quiet_servers, as_json=True)[1])["jsonl"]
    assert check["data"]["files"] == 2 and "2 session files" in check["detail"]


@pytest.fixture
def ollama_like() -> Iterator[str]:
    """A real loopback server answering Ollama's model list."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's spelling)
            body = json.dumps({"models": [{"name": "qwen3:8b"}, {"name": "llama3.2"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_local_server_is_found_and_becomes_the_model(tmp_path, quiet_servers, ollama_like):
    servers = (("ollama", ollama_like), *quiet_servers[1:])
    code, text = report(tmp_path, servers, as_json=True)
    checks = by_id(text)
    assert code == 0
    assert checks["local.ollama"]["status"] == "ok" and checks["local.ollama"]["data"]["models"] == ["qwen3:8b", "llama3.2"]
    assert checks["model"]["data"] == {"ref": "ollama/qwen3:8b", "from": "local server"}


def test_a_configured_local_provider_that_does_not_answer_is_named(tmp_path, quiet_servers):
    port = closed_port()
    (tmp_path / "config.toml").write_text(f'[providers.box]\nbase_url = "http://127.0.0.1:{port}/v1"\nmodels = ["m"]\n')
    check = by_id(report(tmp_path, quiet_servers, as_json=True)[1])["local.box"]
    assert check["status"] == "warn" and f":{port}" in check["detail"] and "[providers.box]" in check["fix"]


def test_the_chosen_model_without_a_key_is_the_problem_with_its_fix(tmp_path, quiet_servers):
    code, text = report(tmp_path, quiet_servers, as_json=True, model="anthropic/claude-sonnet-4-5")
    check = by_id(text)["model"]
    assert code == 1 and check["status"] == "fail" and "ANTHROPIC_API_KEY" in check["fix"]
    code, text = report(tmp_path, quiet_servers, as_json=True, model="nosuch/model")
    check = by_id(text)["model"]
    assert code == 1 and "Unknown provider 'nosuch'" in check["fix"]


def test_json_shape(tmp_path, quiet_servers):
    code, text = report(tmp_path, quiet_servers, {"OPENAI_API_KEY": KEY}, as_json=True)
    data = json.loads(text)
    assert set(data) == {"ok", "version", "checks"} and data["ok"] is (code == 0)
    for check in data["checks"]:
        assert set(check) == {"id", "section", "label", "status", "detail", "fix", "data"}
        assert check["status"] in ("ok", "warn", "fail", "info")
        assert check["section"] in ("install", "files", "models", "terminal")
        assert isinstance(check["data"], dict) and "\n" not in check["detail"]
    ids = [c["id"] for c in data["checks"]]
    for expected in ("treechat", "python", "textual", "config", "data", "database", "jsonl", "model",
                     "provider.openai", "terminal.colours", "terminal.keys", "terminal.clipboard"):
        assert expected in ids


def test_the_command_line(tmp_path, quiet_servers, monkeypatch, capsys):
    monkeypatch.setattr("treechat.doctor.checks.LOCAL_SERVERS", quiet_servers)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("TMUX", raising=False)
    code = main(["doctor", "--home", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and KEY not in out
    assert json.loads(out)["ok"] is True
    code = main(["--model", "anthropic/claude-sonnet-4-5", "doctor", "--home", str(tmp_path)])
    out, _ = capsys.readouterr()
    assert code == 1 and "✗ model" in out and "anthropic/claude-sonnet-4-5 (from --model)" in out


# ---------------------------------------------------------------- the terminal


@pytest.mark.parametrize("env, name, keys", [
    ({"TERM": "xterm-kitty"}, "kitty", True),
    ({"TERM": "xterm-256color", "TERM_PROGRAM": "WezTerm"}, "WezTerm", True),
    ({"TERM": "foot"}, "foot", True),
    ({"TERM": "xterm-ghostty", "TERM_PROGRAM": "ghostty"}, "Ghostty", True),
    ({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, "iTerm2", True),
    ({"TERM": "xterm-256color", "TERM_PROGRAM": "Apple_Terminal"}, "Terminal.app", False),
    ({"TERM": "xterm-256color", "VTE_VERSION": "7200"}, "a VTE terminal (GNOME Terminal, Tilix, …)", False),
    ({"TERM": "xterm"}, "xterm", None),
])
def test_terminals_are_recognised(env, name, keys):
    found = identify(env)
    assert (found.name, found.kitty_keys) == (name, keys)


def checks_for(env: dict[str, str], tmux: dict[str, str] | None = None) -> dict[str, Any]:
    asked: list[str] = []

    def ask(option: str) -> str | None:
        asked.append(option)
        return (tmux or {}).get(option)

    found = {c.id: c for c in terminal_checks(env, encoding="utf-8", tmux=ask)}
    if "TMUX" not in env:
        assert asked == []  # tmux is asked only inside tmux
    return found


def test_colour_depth():
    assert checks_for({"TERM": "xterm-256color", "COLORTERM": "truecolor"})["terminal.colours"].status == "ok"
    c = checks_for({"TERM": "xterm-256color"})["terminal.colours"]
    assert c.status == "warn" and c.data["depth"] == "256" and "COLORTERM=truecolor" in (c.fix or "")
    assert checks_for({"TERM": "dumb"})["terminal.colours"].status == "fail"
    assert checks_for({"TERM": "xterm-256color", "NO_COLOR": "1"})["terminal.colours"].data["depth"] == "none"


def test_keys_and_clipboard_outside_tmux():
    kitty = checks_for({"TERM": "xterm-kitty", "COLORTERM": "truecolor"})
    assert kitty["terminal.keys"].status == "ok" and kitty["terminal.clipboard"].status == "ok"
    vte = checks_for({"TERM": "xterm-256color", "VTE_VERSION": "7200"})
    assert vte["terminal.keys"].status == "warn" and "Ctrl+J" in (vte["terminal.keys"].fix or "")
    assert vte["terminal.clipboard"].status == "warn" and "Shift" in (vte["terminal.clipboard"].fix or "")
    iterm = checks_for({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"})
    assert iterm["terminal.keys"].status == "warn" and "CSI u" in (iterm["terminal.keys"].fix or "")


def test_inside_tmux_its_options_decide():
    env = {"TERM": "tmux-256color", "TMUX": "/tmp/tmux-1000/default,1,0", "TERM_PROGRAM": "tmux"}
    off = checks_for(env, {"extended-keys": "off", "set-clipboard": "external"})
    assert off["terminal.keys"].status == "warn" and "extended-keys on" in (off["terminal.keys"].fix or "")
    assert off["terminal.clipboard"].status == "warn" and "set-clipboard on" in (off["terminal.clipboard"].fix or "")
    assert off["terminal.clipboard"].data["tmux_set_clipboard"] == "external"
    on = checks_for(env, {"extended-keys": "on", "set-clipboard": "on"})
    assert on["terminal.keys"].status == "ok" and on["terminal.clipboard"].status == "ok"
    assert "inside tmux" in on["terminal.emulator"].detail
    silent = checks_for(env, {})
    assert "could not ask tmux" in silent["terminal.keys"].detail


def test_a_non_utf8_locale_is_a_warning():
    (check,) = [c for c in terminal_checks({"TERM": "xterm"}, encoding="ascii", tmux=lambda o: None)
                if c.id == "terminal.encoding"]
    assert check.status == "warn" and "UTF-8" in (check.fix or "")


def test_ascii_output_when_the_stream_cannot_show_marks(tmp_path, quiet_servers):
    written = io.BytesIO()
    out = io.TextIOWrapper(written, encoding="ascii")
    asyncio.run(run_doctor(str(tmp_path), out=out, env={"TERM": "xterm"}, servers=quiet_servers, encoding="ascii",
                           tmux=lambda o: None))
    out.flush()
    text = written.getvalue().decode("ascii")
    assert "x model" in text and "+ Python" in text


def test_only_the_given_servers_and_configured_ones_are_asked(tmp_path, quiet_servers):
    port = closed_port()
    (tmp_path / "config.toml").write_text(f'[providers.ollama]\nbase_url = "http://127.0.0.1:{port}/v1"\n', "utf-8")
    checks = by_id(report(tmp_path, quiet_servers, as_json=True)[1])
    assert checks["local"]["data"]["probed"] == [root for _, root in quiet_servers] + [f"http://127.0.0.1:{port}"]
    assert checks["local.ollama"]["status"] == "warn" and "[providers.ollama]" in checks["local.ollama"]["fix"]
