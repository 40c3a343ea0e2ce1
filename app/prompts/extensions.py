"""Skills and prompt templates together: found once, turned into commands, expanded in a prompt.

`load_extensions` finds both (the folders in `skills.py` and `prompt_templates.py`; `home` is a
parameter, so tests never look at a real `~/.pi` or `~/.claude`). `expand_command` is the one
rule the app and `-p` share: `/TEMPLATE args` becomes the template's body, `/skill NAME text`
the skill's block and the text, `//x` the literal `/x`; any other text is left as it is.
A project's template or skill is read only inside the working folder or where the person allowed
(outside.py): one not asked about yet raises `Undecided`, so the caller asks and expands again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .frontmatter import FrontMatterError
from .outside import ReadsOutside, Undecided
from .skills import Skill, SkillsListing, load_skills, skill_block, skill_roots, skills_listing
from .templates import Template, expand, load_templates, template_folders


class CommandError(ValueError):
    """A `/skill` or template that cannot be expanded; one sentence."""


@dataclass
class Extensions:
    skills: list[Skill] = field(default_factory=list)
    templates: list[Template] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    outside: ReadsOutside | None = None  # where the project's files may be read (None: the working folder only)
    # the system prompt's skills section, within its bounds (what they left out is the first problem)
    prompt_section: SkillsListing = field(default_factory=lambda: SkillsListing("", 0))

    def template(self, name: str) -> Template | None:
        return next((t for t in self.templates if t.name == name.lower()), None)

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def problems_line(self) -> str | None:
        """The one warning the problems are worth (`/skill` lists them all)."""
        if not self.problems:
            return None
        more = len(self.problems) - 1
        tail = f" (and {more} more: /skill lists them)" if more else ""
        return f"{self.problems[0]}{tail}"


def user_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def pi_agent_dir(env: Mapping[str, str], home: Path) -> Path:
    """Pi's folder: `PI_CODING_AGENT_DIR`, else ~/.pi/agent (as Pi finds it)."""
    chosen = env.get("PI_CODING_AGENT_DIR")
    return Path(chosen).expanduser() if chosen else home / ".pi" / "agent"


def load_extensions(cwd: str | os.PathLike[str], config_dir: Path | None, env: Mapping[str, str],
                    builtins: set[str], outside: ReadsOutside | None = None) -> Extensions:
    """`outside`: the chat's reads outside the working folder (None: nothing outside is read)."""
    home = user_home(env)
    pi_dir = pi_agent_dir(env, home)
    folder = Path(cwd).resolve()
    bound = outside or ReadsOutside.for_cwd(folder)
    skills, skill_problems = load_skills(skill_roots(folder, config_dir, home, pi_dir), bound)
    templates, template_problems = load_templates(template_folders(folder, config_dir, pi_dir), builtins, bound)
    section = skills_listing(skills)
    note = section.note()
    return Extensions(skills, templates, ([note] if note else []) + skill_problems + template_problems, bound, section)


def _allowed_file(ext: Extensions, kind: str, path: Path) -> Path:
    """Where a project's file really is, when it may be read; raises Undecided (ask first) or
    CommandError (the person said no)."""
    real = os.path.realpath(path)
    bound = ext.outside or ReadsOutside.for_cwd(os.getcwd())
    if bound.allows(kind, path, real):
        return Path(real)
    if bound.verdict(real) is None:
        raise Undecided(real)
    raise CommandError(f"The {kind} {path} leads outside the working folder {bound.folder} (to {real}), and reading "
                       "there was not allowed; it is not used.")


def expand_command(text: str, ext: Extensions) -> str:
    """What a prompt becomes before it is sent (see the module's words). Raises CommandError."""
    from treechat.widgets.commands import parse_slash

    stripped = text.strip()
    if stripped.startswith("//"):
        return stripped[1:]
    parsed = parse_slash(stripped)
    if parsed is None:
        return text
    name, args = parsed
    if name == "skill":
        return _skill(args, ext)
    template = ext.template(name)
    if template is None:
        return text
    real = _allowed_file(ext, "template", template.path) if template.bounded else None
    try:
        return expand(template, args, real)
    except FrontMatterError as err:
        raise CommandError(f"The template {template.path} {err}.") from None


def template_of(text: str, ext: Extensions) -> str | None:
    """The template's name when `expand_command` makes `text` a template's body (the message then
    carries what was typed: storage/expanded.py); None for anything else."""
    from treechat.widgets.commands import parse_slash

    stripped = text.strip()
    parsed = None if stripped.startswith("//") else parse_slash(stripped)
    if parsed is None or parsed[0] == "skill":
        return None
    template = ext.template(parsed[0])
    return template.name if template is not None else None


def _skill(args: str, ext: Extensions) -> str:
    name, _, text = args.partition(" ")
    if not name:
        raise CommandError(f"Which skill? /skill NAME [text]{_known(ext)}")
    skill = ext.skill(name.strip())
    if skill is None:
        raise CommandError(f"No skill is named {name!r}{_known(ext)}")
    real = _allowed_file(ext, "SKILL.md", skill.path) if skill.bounded else None
    try:
        return skill_block(skill, text.strip(), real)
    except FrontMatterError as err:
        raise CommandError(f"The skill {skill.path} {err}.") from None


def _known(ext: Extensions) -> str:
    names = ", ".join(s.name for s in ext.skills[:20])
    return f"; the skills: {names}." if names else "; there are none (see docs/extensions.md: Agent Skills)."


def listing(ext: Extensions, skills_announced: bool) -> str:
    """What `/skill` alone shows: every skill and template, and every problem found."""
    lines = ["Skills (/skill NAME [text] puts one into your message):"]
    note = ext.prompt_section.note()
    if note:  # first, not after hundreds of them
        lines.append(f"  ! {note}")
    bounded = set(ext.prompt_section.left_out)
    for s in ext.skills:
        hidden = ("" if s.model_invocable and s.name not in bounded else
                  " (not listed to the model: disable-model-invocation)" if not s.model_invocable else
                  " (not listed to the model: over the system prompt's bound)")
        lines.append(f"  {s.name}: {s.description}{hidden}\n    {s.path}")
    if not ext.skills:
        lines.append("  none (SKILL.md folders in .agents/skills, .treechat/skills, the config folder's skills, "
                     "~/.pi/agent/skills, ~/.claude/skills, …)")
    elif not skills_announced:
        lines.append("  (the model is told about them when the read tool is on: tools = [\"read\", …])")
    lines.append("")
    lines.append("Prompt templates (/NAME [arguments]):")
    for t in ext.templates:
        hint = f" {t.argument_hint}" if t.argument_hint else ""
        lines.append(f"  /{t.name}{hint}: {t.description}\n    {t.path}")
    if not ext.templates:
        lines.append("  none (.md files in .treechat/prompts, .pi/prompts, the config folder's prompts, "
                     "~/.pi/agent/prompts)")
    problems = [p for p in ext.problems if p != note]
    if problems:
        lines += ["", "Problems:", *(f"  {p}" for p in problems)]
    held = ext.outside.held_lines() if ext.outside is not None else []
    if held:
        lines += ["", f"Outside the working folder {ext.outside.folder if ext.outside else ''} (read only if you allow "
                  "it):", *(f"  {line}" for line in held)]
    return "\n".join(lines)


def skills_section(cwd: str | os.PathLike[str], config_dir: Path | None, env: Mapping[str, str]) -> str:
    """The system prompt's skills section for `cwd` (`treechat context`: no controller there)."""
    home = user_home(env)
    folder = Path(cwd).resolve()
    roots = skill_roots(folder, config_dir, home, pi_agent_dir(env, home))
    return skills_listing(load_skills(roots, ReadsOutside.for_cwd(folder))[0]).text  # (nothing outside: nobody to ask)
