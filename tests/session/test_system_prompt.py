"""The system prompt: its parts with and without tools, the person's instructions, the context
files found from the working folder up to the repository root (and the global folder), and a
live session's prompt following its tools."""

from __future__ import annotations

from datetime import date

import pytest

from treechat.agent.tools import make_tools
from treechat.llm.types import ModelInfo
from treechat.prompts.context_files import MAX_CONTEXT_FILE_CHARS, find_context_files
from treechat.prompts.outside import ReadsOutside
from treechat.session.agent_session import AgentSession
from treechat.session.session import Session
from treechat.session.system_prompt import (
    NO_TOOLS,
    Environment,
    SystemPromptBuilder,
    bind_system_prompt,
    build_system_prompt,
)
from treechat.storage.memory import MemoryCatalog

ENV = Environment(cwd="/work/project", today=date(2026, 5, 12), os_name="Linux, Debian 12", shell="/bin/zsh")


def test_with_tools_it_lists_each_with_how_to_use_it() -> None:
    text = build_system_prompt(tools=make_tools(["read", "grep", "bash"]), environment=ENV)
    assert text.startswith("You are the assistant in treechat")
    assert "# Tools" in text and NO_TOOLS not in text
    for line in ("- read: Read a text file.", "- grep: Search text files", "- bash: Run a shell command"):
        assert line in text
    assert "approves each command" in text and "- ls:" not in text
    assert "- Working folder: /work/project" in text
    assert "- Today's date: 2026-05-12 (Tuesday)" in text
    assert "- Operating system: Linux, Debian 12" in text and "- Shell: /bin/zsh" in text


def test_without_tools_it_says_so_and_lists_none() -> None:
    text = build_system_prompt(tools=[], environment=ENV)
    assert NO_TOOLS in text and "# Tools" not in text and "- read:" not in text
    assert "- Working folder: /work/project" in text


def test_the_persons_instructions_come_from_config_and_the_command_line(tmp_path) -> None:
    builder = SystemPromptBuilder(cwd=str(tmp_path), config_instructions="Answer in French.",
                                  instructions="Be brief.")
    text = builder.build([])
    assert "# Instructions from the person" in text
    assert text.index("Answer in French.") < text.index("Be brief.")
    builder.instructions = None  # `/system` cleared
    assert "Be brief." not in builder.build([]) and "Answer in French." in builder.build([])
    assert "# Instructions from the person" not in SystemPromptBuilder(cwd=str(tmp_path)).build([])


@pytest.fixture
def tree(tmp_path):
    """outside/ (above the repository: never read), repo/ (.git), repo/pkg/, repo/pkg/sub/ (cwd)."""
    outside = tmp_path / "outside"
    repo = outside / "repo"
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    (outside / "AGENTS.md").write_text("OUTSIDE the repository")
    (repo / "AGENTS.md").write_text("ROOT rules")
    (repo / "CLAUDE.md").write_text("ROOT claude (shadowed by AGENTS.md)")
    (repo / "pkg" / "CLAUDE.md").write_text("PKG claude rules")
    (sub / "AGENTS.md").write_text("SUB rules")
    home = tmp_path / "config"
    home.mkdir()
    (home / "AGENTS.md").write_text("GLOBAL rules")
    return {"repo": repo, "sub": sub, "home": home, "outside": outside}


def test_context_files_from_the_global_folder_and_the_repository_down_to_the_cwd(tree) -> None:
    found = find_context_files(tree["sub"], tree["home"])
    assert [f.text for f in found] == ["GLOBAL rules", "ROOT rules", "PKG claude rules", "SUB rules"]
    assert [f.path.name for f in found] == ["AGENTS.md", "AGENTS.md", "CLAUDE.md", "AGENTS.md"]
    text = SystemPromptBuilder(cwd=str(tree["sub"]), global_dir=str(tree["home"])).build([])
    assert "# Project context" in text
    assert text.index("GLOBAL rules") < text.index("ROOT rules") < text.index("PKG claude") < text.index("SUB rules")
    assert f"## {tree['sub'] / 'AGENTS.md'}" in text and "OUTSIDE" not in text and "shadowed" not in text


def test_without_a_repository_every_folder_up_to_the_root_counts_once_allowed(tree) -> None:
    """Without a repository the working folder is the cwd: the files above it are reads outside
    (issue 36), read once the person allowed them."""
    (tree["repo"] / ".git").rmdir()
    outside = ReadsOutside.for_cwd(tree["sub"])
    assert [f.text for f in find_context_files(tree["sub"], outside=outside)] == ["SUB rules"]
    assert [h.shown for h in outside.pending.values()][-3:] == [
        str(tree["outside"] / "AGENTS.md"), str(tree["repo"] / "AGENTS.md"), str(tree["repo"] / "pkg" / "CLAUDE.md")]
    found = find_context_files(tree["sub"], outside=ReadsOutside.for_cwd(tree["sub"], anywhere=True))
    assert [f.text for f in found][-4:] == ["OUTSIDE the repository", "ROOT rules", "PKG claude rules", "SUB rules"]


def test_unreadable_and_huge_files(tree) -> None:
    (tree["repo"] / "pkg" / "CLAUDE.md").write_bytes(b"\x00\x01binary")
    (tree["sub"] / "AGENTS.md").write_text("A" * (MAX_CONTEXT_FILE_CHARS + 500))
    found = find_context_files(tree["sub"])
    assert [f.path.parent for f in found] == [tree["repo"], tree["sub"]]
    big = found[-1]
    assert big.truncated and big.text.startswith("A" * 100)
    assert big.text.endswith(f"[… AGENTS.md is {MAX_CONTEXT_FILE_CHARS + 500:,} bytes; only its first "
                             f"{MAX_CONTEXT_FILE_CHARS:,} characters are included here.]")
    assert len(big.text) < MAX_CONTEXT_FILE_CHARS + 200
    (tree["sub"] / "AGENTS.md").unlink()
    (tree["sub"] / "AGENTS.md").mkdir()  # a folder with the name: present, not readable as a file
    assert [f.path.parent for f in find_context_files(tree["sub"])] == [tree["repo"]]


def test_from_settings_uses_the_config_folder(tree) -> None:
    from treechat.config.settings import load_settings

    (tree["home"] / "config.toml").write_text('system_prompt = "Use British spelling."\n')
    builder = SystemPromptBuilder.from_settings(load_settings(tree["home"], env={}), cwd=tree["sub"],
                                                instructions="Be brief.")
    text = builder.build([])
    assert "Use British spelling." in text and "Be brief." in text and "GLOBAL rules" in text


async def test_a_live_session_follows_its_tools_and_its_leaf(tree) -> None:
    session = await Session.open(await MemoryCatalog().create())
    tools = make_tools(["read", "ls"])
    s = await AgentSession.create(session, model=ModelInfo(id="m", provider="openai"), tools=tools)
    builder = SystemPromptBuilder(cwd=str(tree["sub"]))
    refresh = bind_system_prompt(s, builder)
    assert "- read:" in s.state.system_prompt and "- ls:" in s.state.system_prompt
    await s.set_active_tools(["ls"])
    assert "- read:" not in s.state.system_prompt and "- ls:" in s.state.system_prompt
    await s.set_active_tools([])
    assert NO_TOOLS in s.state.system_prompt
    builder.instructions = "Reply in haiku."
    assert "Reply in haiku." in refresh() and "Reply in haiku." in s.state.system_prompt
