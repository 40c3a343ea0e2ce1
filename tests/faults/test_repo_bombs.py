"""Issue 36: a cloned repository's files cannot exhaust the machine or crash treechat.

- A YAML alias bomb in a template's front matter ("billion laughs": it took 2.2 GB and a
  traceback) is one warning naming the file; the template is not used. Asserted on the outcome.
- Front matter and `.mcp.json` nested thousands deep (RecursionError in `-p`, `treechat mcp` and
  the app) are one warning naming the file, in each of the three.
- 300 skills with large descriptions (900 KB each made a 270 MB request; now front matter over
  64 KB is refused, so 60 KB each here): the request the loopback provider gets stays under the
  bound and says how many skills it left out; the person is told once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from tests.tui.conftest import fake, make_app, screen_text, wait_for  # noqa: F401  (fixtures)
from treechat.chat.events import Notice
from treechat.prompts.extensions import listing, load_extensions
from treechat.prompts.skills import MAX_LISTED, MAX_LISTED_BYTES
from treechat.tui import TreechatApp

from ..mcp.helpers import treechat

MODEL = ("--model", "openai/fake-model")


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + f"\nargument-hint: *a{levels - 1}\ndescription: Review it\n"


def deep_yaml(depth: int = 5_000) -> str:
    return "description: Deep\nx: " + "[" * depth + "]" * depth + "\n"


def deep_json(depth: int = 50_000) -> str:
    return '{"mcpServers": {"deep": ' + "[" * depth + "]" * depth + "}}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


def extensions(folder: Path):
    return load_extensions(folder, None, {"HOME": str(folder.parent / "nohome")}, set(TreechatApp.slash_commands))


def warnings(err: str) -> list[str]:
    """stderr's lines but the one `-p` ends with (which session it wrote)."""
    return [line for line in err.splitlines() if line.startswith("treechat: ")
            and not line.startswith("treechat: session ")]


def test_an_alias_bomb_in_a_templates_front_matter_is_one_warning(tmp_path) -> None:
    folder = project(tmp_path)
    bomb = write(folder / ".treechat" / "prompts" / "review.md", f"---\n{alias_bomb()}---\nReview $1.\n")
    ext = extensions(folder)
    assert ext.templates == []
    assert ext.problems == [f"{bomb} has front matter with a YAML alias (*name), which treechat does not read; "
                            "the template is not used."]


def test_front_matter_too_deep_too_wide_or_unbuildable_is_one_warning_each(tmp_path) -> None:
    folder = project(tmp_path)
    skills = folder / ".agents" / "skills"
    deep = write(skills / "deep" / "SKILL.md", f"---\n{deep_yaml(20)}---\nbody\n")
    deeper = write(skills / "deeper" / "SKILL.md", f"---\n{deep_yaml(40_000)}---\nbody\n")
    wide = write(skills / "wide" / "SKILL.md", "---\ndescription: Wide\n" + "".join(f"k{i}: v\n" for i in range(3000))
                 + "---\nbody\n")
    digits = write(skills / "digits" / "SKILL.md", "---\ndescription: Digits\nn: " + "9" * 6000 + "\n---\nbody\n")
    write(skills / "fine" / "SKILL.md", "---\ndescription: Fine\n---\nbody\n")
    ext = extensions(folder)
    assert [s.name for s in ext.skills] == ["fine"]
    assert sorted(ext.problems) == sorted([
        f"{deep} has front matter nested more than 16 deep; the skill is skipped.",
        f"{deeper} has front matter over 64 KB; the skill is skipped.",
        f"{wide} has front matter of over 2,000 values; the skill is skipped.",
        f"{digits} has front matter with a value treechat cannot read (ValueError); the skill is skipped.",
    ])


@pytest.mark.parametrize("where", ["template", "skill"])
async def test_print_mode_says_a_bad_front_matter_in_one_line(tmp_path, where) -> None:
    folder = project(tmp_path)
    if where == "template":
        bad = write(folder / ".treechat" / "prompts" / "review.md", f"---\n{alias_bomb()}---\nReview $1.\n")
    else:
        bad = write(folder / ".agents" / "skills" / "deep" / "SKILL.md", f"---\n{deep_yaml(5_000)}---\nbody\n")
    async with FakeProvider() as fp:
        fp.script_openai(["fine"])
        code, out, err = await treechat(tmp_path / "home", "-p", "/review this", *MODEL, fp=fp, cwd=folder)
    assert code == 0 and out == "fine\n"
    assert len(warnings(err)) == 1 and str(bad) in err and "Traceback" not in err
    assert fp.requests[0].body["messages"][-1]["content"] == "/review this"  # the template was not used


async def test_a_deep_mcp_json_is_one_line_in_print_mode_and_treechat_mcp(tmp_path) -> None:
    folder = project(tmp_path)
    path = write(folder / ".mcp.json", deep_json())
    line = f"{path} nests objects and lists more than 64 deep; not read."
    async with FakeProvider() as fp:
        fp.script_openai(["fine"])
        code, out, err = await treechat(tmp_path / "home", "-p", "hi", *MODEL, fp=fp, cwd=folder)
        assert code == 0 and out == "fine\n" and warnings(err) == [f"treechat: {line}"]
    code, out, err = await treechat(tmp_path / "home", "mcp", cwd=folder)
    assert code == 0 and out == f"! {line}\n" and "Traceback" not in err
    code, out, err = await treechat(tmp_path / "home", "mcp", "--json", cwd=folder)
    assert json.loads(out)["problems"] == [line]


async def test_the_app_starts_with_deep_files_and_says_so(make_app, tmp_path) -> None:  # noqa: F811
    mcp = write(tmp_path / ".mcp.json", deep_json())
    deep = write(tmp_path / ".agents" / "skills" / "deep" / "SKILL.md", f"---\n{deep_yaml(5_000)}---\nbody\n")
    notes: list[str] = []

    def hook(message) -> None:
        event = getattr(message, "event", None)
        if isinstance(event, Notice):
            notes.append(event.text)

    async with make_app(message_hook=hook) as (app, pilot):
        await wait_for(pilot, lambda: len(notes) >= 2, what="the two warnings", rounds=1000)
        assert f"{mcp} nests objects and lists more than 64 deep; not read." in notes
        assert any(n.startswith(f"{deep} has front matter") for n in notes)
        assert app.is_running


@pytest.mark.slow  # three hundred huge files
async def test_three_hundred_huge_skills_stay_within_the_request_bound(tmp_path) -> None:
    folder = project(tmp_path)
    huge = "Does a great many things. " * 2_400  # ~60 KB each (cut to 1,024 characters)
    for i in range(300):
        write(folder / ".agents" / "skills" / f"skill-{i:03}" / "SKILL.md",
              f"---\nname: skill-{i:03}\ndescription: >-\n  {huge}\n---\nbody\n")
    async with FakeProvider() as fp:
        fp.script_openai(["fine"])
        code, out, err = await treechat(tmp_path / "home", "-p", "hi", "--tools", "read", *MODEL, fp=fp, cwd=folder)
    assert code == 0 and out == "fine\n"
    system = fp.requests[0].body["messages"][0]["content"]
    listed = system.count("<skill>")
    assert 0 < listed <= MAX_LISTED
    section = system[system.index("# Skills"):system.index("</available_skills>")]
    assert len(section.encode()) <= MAX_LISTED_BYTES + 1_000  # (the section's own words)
    assert f"({300 - listed} more skills are not listed here: the list is bounded." in system
    assert len(json.dumps(fp.requests[0].body)) < 100_000  # the whole request
    said = [line for line in warnings(err) if "not listed to the model" in line]
    assert len(said) == 1 and said[0].startswith(f"treechat: {300 - listed} skills are not listed to the model")
    ext = extensions(folder)  # /skill lists them all, marks those left out, and says why first
    text = listing(ext, skills_announced=True)
    assert text.count("(not listed to the model: over the system prompt's bound)") == 300 - listed
    assert text.splitlines()[1].startswith(f"  ! {300 - listed} skills are not listed to the model")
    assert all(len(s.description) <= 1_024 for s in ext.skills)
