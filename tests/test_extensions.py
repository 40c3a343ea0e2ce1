"""Agent Skills and prompt templates (issue 24): found where treechat, Pi and Claude Code keep
them, announced to the model, expanded by the same rule in the app and `-p`. The user's home is
a temporary folder (the `HOME` of every test), so a machine's own ~/.pi never plays a part."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.prompts.extensions import CommandError, expand_command, load_extensions
from treechat.prompts.templates import parse_args, substitute
from treechat.storage.memory import MemoryCatalog
from treechat.widgets.commands import NAMES


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill(folder: Path, name: str, description: str = "Does a thing", body: str = "Step one.") -> Path:
    return write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    home = Path(os.environ["HOME"])
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    return {"home": home, "project": project, "config": tmp_path / "treechat-home"}


def found(places: dict[str, Path]):
    return load_extensions(places["project"], places["config"], {"HOME": str(places["home"])}, set(NAMES))


def test_skills_come_from_every_folder_and_the_project_wins(places) -> None:
    skill(places["config"] / "skills", "deploy", "Deploy the site")
    skill(places["project"] / ".agents" / "skills", "review", "Review a change")
    skill(places["project"] / ".claude" / "skills", "style", "The house style")
    skill(places["home"] / ".pi" / "agent" / "skills", "pi-thing", "From Pi")
    skill(places["home"] / ".claude" / "skills", "review", "A second review (loses)")
    skill(places["project"] / ".treechat" / "skills" / "nested", "deep", "Found below a folder")
    ext = found(places)
    assert sorted(s.name for s in ext.skills) == ["deep", "deploy", "pi-thing", "review", "style"]
    assert next(s for s in ext.skills if s.name == "review").description == "Review a change"
    assert len(ext.problems) == 1 and "skill 'review' is not used" in ext.problems[0]


def test_invalid_front_matter_is_one_warning_not_a_failure(places) -> None:
    root = places["project"] / ".agents" / "skills"
    write(root / "broken" / "SKILL.md", "---\nname: broken\ndescription: [unclosed\n---\nbody\n")
    write(root / "nodesc" / "SKILL.md", "---\nname: nodesc\n---\nbody\n")
    write(root / "Bad_Name" / "SKILL.md", "---\ndescription: fine otherwise\n---\nbody\n")
    skill(root, "good")
    ext = found(places)
    assert sorted(s.name for s in ext.skills) == ["Bad_Name", "good"]  # a name problem warns, still loads
    assert len(ext.problems) == 3
    assert any("front matter that is not valid YAML" in p for p in ext.problems)
    assert any("no description" in p for p in ext.problems)
    line = ext.problems_line()
    assert line is not None and line.endswith("(and 2 more: /skill lists them)") and "\n" not in line


def test_templates_expand_with_pi_argument_rules(places) -> None:
    write(places["config"] / "prompts" / "review.md",
          "---\ndescription: Review files\nargument-hint: FILE [FOCUS]\n---\nReview $1 focusing on ${@:2}. All: $@\n")
    write(places["home"] / ".pi" / "agent" / "prompts" / "explain.md", "Explain $ARGUMENTS simply.\n")
    write(places["project"] / ".pi" / "prompts" / "model.md", "shadowing a built-in\n")
    ext = found(places)
    assert sorted(t.name for t in ext.templates) == ["explain", "review"]
    assert any("/model is a built-in command; the template is not used" in p for p in ext.problems)
    review = ext.template("review")
    assert review is not None and review.description == "Review files" and review.argument_hint == "FILE [FOCUS]"
    assert expand_command("/review foo.py bar", ext) == "Review foo.py focusing on bar. All: foo.py bar"
    assert expand_command('/explain "tree sitter"', ext) == "Explain tree sitter simply.\n"  # (Pi trims only after front matter)
    assert expand_command("//review foo.py", ext) == "/review foo.py"  # the literal escape
    assert expand_command("/unknown x", ext) == "/unknown x"
    assert expand_command("/usr/bin/env", ext) == "/usr/bin/env"
    assert parse_args("a 'b c' \"d\"e  f") == ["a", "b c", "de", "f"]
    assert substitute("$1-$2-$3|${@:2:1}", ["x", "y"]) == "x-y-|y"


def test_skill_command_puts_the_body_in_pis_block(places) -> None:
    path = skill(places["project"] / ".agents" / "skills", "review", body="Check the tests first.")
    ext = found(places)
    text = expand_command("/skill review look at foo.py", ext)
    assert text == (f'<skill name="review" location="{path}">\nReferences are relative to {path.parent}.\n\n'
                    "Check the tests first.\n</skill>\n\nlook at foo.py")
    with pytest.raises(CommandError, match="No skill is named 'nope'; the skills: review."):
        expand_command("/skill nope", ext)
    assert expand_command("/skill:review look at foo.py", ext) == text  # Pi's spelling
    assert expand_command("/skill:review", ext).endswith("</skill>")


async def test_print_mode_expands_templates_and_announces_skills(places, tmp_path) -> None:
    write(places["config"] / "prompts" / "review.md", "Please review $1 and $2.\n")
    write(places["home"] / ".pi" / "agent" / "prompts" / "explain.md", "Explain $1.\n")
    skill(places["config"] / "skills", "deploy", "Deploy the site")
    skill(places["project"] / ".agents" / "skills", "review-code", "Review code well")
    async with FakeProvider() as fp:
        env = {"OPENAI_BASE_URL": fp.base_url, "OPENAI_API_KEY": "k", "HOME": str(places["home"])}
        settings = load_settings(places["config"], env=env)
        for prompt, expected in (("/review foo.py bar", "Please review foo.py and bar."), ("/explain x", "Explain x.")):
            fp.script_openai(["ok"])
            chat = Chat(catalog=MemoryCatalog(), settings=settings, registry=ModelRegistry(settings, env=env),
                        model_ref="openai/fake-model", tools=["read"], cwd=str(places["project"]))
            await chat.new_session()
            code = await run_print(chat, prompt, out=io.StringIO(), err=io.StringIO())
            await chat.close()
            assert code == 0
            body = fp.requests[-1].body
            assert body["messages"][-1] == {"role": "user", "content": expected}
            system = body["messages"][0]["content"]
            assert "<name>deploy</name>" in system and "<name>review-code</name>" in system
            assert str(places["config"] / "skills" / "deploy" / "SKILL.md") in system
