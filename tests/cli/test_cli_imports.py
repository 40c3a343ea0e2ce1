"""Start-up in proportion (issue 26): each subcommand imports only what it needs.

Each case runs `treechat.cli.main.main` in a fresh interpreter and lists the modules it loaded: the
storage commands never load the providers (httpx), Textual or the agent loop, and `--version`
loads next to nothing (no pydantic, no asyncio, no importlib.metadata)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE = r"""
import contextlib, io, json, sys
from treechat.cli.main import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "out": out.getvalue()[:200], "err": err.getvalue()[-600:],
                  "modules": sorted(sys.modules)}))
"""

# What a storage command must never load: the providers' HTTP stack, the TUI, the agent loop.
NEVER = ("httpx", "textual", "rich", "markdown_it", "treechat.tui", "treechat.chat", "treechat.llm.openai",
         "treechat.llm.anthropic", "treechat.llm.registry", "treechat.agent.agent", "treechat.agent.loop",
         "treechat.session.agent_session", "mcp", "mcp_types", "anyio", "yaml", "acp", "treechat.acp")


def probe(*argv: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def loaded(*argv: str) -> tuple[object, str, list[str]]:
    data = probe(*argv)
    return data["code"], data["out"], data["modules"]


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER)]


def test_version_loads_next_to_nothing() -> None:
    code, out, modules = loaded("--version")
    assert code == 0 and out.startswith("treechat ")
    for name in ("pydantic", "msgspec", "aiosqlite", "sqlite3", "asyncio", "importlib.metadata", "platformdirs"):
        assert name not in modules, f"--version imports {name}"
    ours = [m for m in modules if m.startswith("treechat")]
    assert len(ours) <= 8, ours  # the CLI, its sanitizer and progress, and the package files above them


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    session = home / "s.jsonl"
    session.write_text(
        '{"type":"session","version":3,"id":"imports-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hello needle","timestamp":1767225601000}}\n'
    )
    code, _, _ = loaded("--home", str(home), "import", str(session))
    assert code == 0
    return home


@pytest.mark.parametrize("argv", [["sessions"], ["search", "needle"], ["context", "imports-1"], ["tree", "imports-1"],
                                  ["import", "{home}/s.jsonl"], ["export", "imports-1"], ["files", "imports-1"],
                                  ["restore", "imports-1", "--to", "leaf"]])
def test_storage_commands_load_no_providers_tui_or_agent(home: Path, argv: list[str]) -> None:
    code, out, modules = loaded("--home", str(home), *[a.format(home=home) for a in argv])
    assert code == 0
    assert out.strip(), "the command printed nothing: it did not run"
    assert heavy(modules) == [], f"{argv[0]} loads {heavy(modules)}"


APP_START = r"""
import json, sys
from treechat.config.settings import load_settings
from treechat.chat import Chat
from treechat.llm.registry import ModelRegistry
from treechat.storage.memory import MemoryCatalog
from treechat.tui.app import TreechatApp
settings = load_settings(sys.argv[1], env={})
assert settings.mcp_servers, "the probe's config has a server"
Chat(catalog=MemoryCatalog(), settings=settings, registry=ModelRegistry(settings, env={}), cwd=sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


def test_the_app_builds_with_mcp_servers_configured_without_loading_the_sdk(tmp_path: Path) -> None:
    """The SDK (a second of imports), anyio and YAML load after the first frame, never before it."""
    (tmp_path / "config.toml").write_text('[mcp_servers.time]\ncommand = "mcp-server-time"\n')
    done = subprocess.run([sys.executable, "-c", APP_START, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert [m for m in modules if m.split(".")[0] in ("mcp", "mcp_types", "anyio", "yaml")] == []


# A session file the streamed import takes whole: every line passes wire_check's proof (none deep).
VALID = (
    '{"type":"session","version":3,"id":"stream-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"hello","timestamp":1767225601000}}\n'
    '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z",'
    '"message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai","provider":"p",'
    '"model":"m","usage":{"input":3,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":4,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop",'
    '"timestamp":1767225602000}}\n'
    '{"type":"model_change","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z",'
    '"provider":"p","modelId":"m2"}\n'
)


def _pydantic(modules: list[str]) -> list[str]:
    """pydantic itself and the modules that build its models (storage's entries, the config's schema)."""
    return [m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core")
            or m in ("treechat.storage.model", "treechat.storage.model_base", "treechat.storage.model_views",
                     "treechat.config.settings")]


def test_a_streamed_import_of_a_valid_file_loads_no_pydantic(tmp_path: Path) -> None:
    """wire_check proves every line valid, so no model is built and pydantic is never imported."""
    (tmp_path / "s.jsonl").write_text(VALID)
    data = probe("--home", str(tmp_path / "home"), "import", str(tmp_path / "s.jsonl"))
    assert data["code"] == 0 and data["out"].strip() == "stream-1"
    assert data["err"].strip() == "treechat: imported 1 session (3 entries)"
    assert "treechat.storage.sqlite.stream_import" in data["modules"]  # it streamed
    assert _pydantic(data["modules"]) == [], "a valid file's streamed import loads pydantic"


def test_lines_the_proof_refuses_load_pydantic_on_demand_and_import_as_before(tmp_path: Path) -> None:
    """A lax value only pydantic accepts ("5" for an int) and a line it refuses: pydantic is
    imported for them, the first is kept, the second skipped and named as the whole-file reader does."""
    lax = ('{"type":"compaction","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z",'
           '"summary":"so far","firstKeptEntryId":"a2","tokensBefore":"5"}\n')
    bad = '{"type":"model_change","id":"a5","parentId":"a4","timestamp":"2026-01-01T00:00:05.000Z","provider":"p"}\n'
    (tmp_path / "s.jsonl").write_text(VALID + lax + bad)
    home = str(tmp_path / "home")
    data = probe("--home", home, "import", str(tmp_path / "s.jsonl"))
    assert data["code"] == 0 and data["out"].strip() == "stream-1"
    assert data["err"].strip() == (
        "treechat: imported 1 session (4 entries); skipped 1 unreadable line(s) in s.jsonl "
        "(first: s.jsonl line 6 skipped: invalid entry: field 'modelId': Field required)")
    assert "pydantic" in data["modules"] and "treechat.storage.sqlite.stream_import" in data["modules"]
    entries = _entries(home)
    assert [e["id"] for e in entries] == ["a1", "a2", "a3", "a4"]
    assert entries[3]["tokensBefore"] == 5  # the lax value, as pydantic read it


def _entries(home: str) -> list[Any]:
    done = subprocess.run([sys.executable, "-m", "treechat", "--home", home, "tree", "stream-1", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    entries: list[Any] = json.loads(done.stdout)["entries"]
    return entries
