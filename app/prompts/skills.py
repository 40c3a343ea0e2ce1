"""Agent Skills: folders with a `SKILL.md` (`name` and `description` in its front matter).

Found where treechat, Pi and Claude Code keep them, the project's first (the first of a name
wins, and a second one is a warning), then the user's:

    .treechat/skills  .agents/skills (each folder up to the repository root)  .pi/skills  .claude/skills
    <config folder>/skills  ~/.agents/skills  ~/.pi/agent/skills  ~/.claude/skills

Pi's rules (0.73.1): a folder with a SKILL.md is a skill and is not searched further; in Pi's own
folders a `.md` file at the top is a skill too; dot-folders and node_modules are skipped; the name
should match the folder, be at most 64 of a-z, 0-9 and "-" (a warning otherwise, the skill still
loads); the description is required (without one the skill is skipped with a warning) and at most
1,024 characters; `disable-model-invocation: true` keeps it out of the system prompt (`/skill`
still uses it). The system prompt lists names, descriptions and paths when the read tool is on,
so the model reads a skill's file when a task matches it; `/skill NAME [text]` puts the body in.

A repository decides what is in these folders, so what they cost is bounded: a description is
cut to 1,024 characters, a name over MAX_NAME_KEPT characters skips its skill, and the system
prompt lists at most MAX_LISTED skills in MAX_LISTED_BYTES (300 skills of 900 KB descriptions made
a 270 MB request); the rest are left out, which the section itself says (so the model knows) and
`skills_listing(...).note()` says to the person. Names and descriptions are sanitised when read:
they are shown in toasts, dialogs, completion and F1, and no escape sequence of a folder's name
reaches the terminal.

The project's folders are the repository's: a SKILL.md, or a folder, there whose real path is
outside the working folder (a link out) is read only once the person allowed it (outside.py), and
is not walked into before. The person's own folders are read wherever their links lead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from treechat.text.sanitize import sanitize_line

from .frontmatter import FrontMatterError, read_front_matter

if TYPE_CHECKING:
    from .outside import ReadsOutside

MAX_NAME, MAX_DESCRIPTION = 64, 1024
MAX_NAME_KEPT = 256  # a longer name cannot be meant to be typed: the skill is skipped
MAX_LISTED = 100  # skills the system prompt names
MAX_LISTED_BYTES = 40_000  # UTF-8 bytes of the system prompt's skill entries (~10k tokens)
MAX_DEPTH, MAX_ENTRIES = 6, 5000  # a skills folder linked to somewhere huge is not walked whole
Mode = Literal["pi", "agents"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # its SKILL.md
    base_dir: Path
    model_invocable: bool = True
    bounded: bool = False  # the project's: read again only inside the working folder, or where allowed


class SkillRoot(NamedTuple):
    path: Path
    mode: Mode
    own: bool  # the person's folder (read as it is); else the project's (bounded to the working folder)


def skill_roots(cwd: Path, config_dir: Path | None, home: Path, pi_dir: Path) -> list[SkillRoot]:
    project: list[tuple[Path, Mode]] = [(cwd / ".treechat" / "skills", "agents")]
    project += [(folder / ".agents" / "skills", "agents") for folder in _up_to_repository_root(cwd)]
    project += [(cwd / ".pi" / "skills", "pi"), (cwd / ".claude" / "skills", "agents")]
    own: list[tuple[Path, Mode]] = [(config_dir / "skills", "agents")] if config_dir is not None else []
    own += [(home / ".agents" / "skills", "agents"), (pi_dir / "skills", "pi"), (home / ".claude" / "skills", "agents")]
    theirs = {root for root, _ in own}
    unique: dict[Path, SkillRoot] = {}
    for root, mode in [*project, *own]:
        if root not in unique:  # (the first place wins; a folder that is the person's stays theirs)
            unique[root] = SkillRoot(root, mode, root in theirs)
    return list(unique.values())


def _up_to_repository_root(cwd: Path) -> list[Path]:
    folders = [cwd, *cwd.parents]
    root = next((f for f in folders if (f / ".git").exists()), None)
    return folders[: folders.index(root) + 1] if root is not None else folders


def load_skills(roots: list[SkillRoot], outside: ReadsOutside) -> tuple[list[Skill], list[str]]:
    """(the skills, one line per problem). A project's file or folder outside the working folder
    is skipped unless `outside` allows it (it is then pending there)."""
    skills: dict[str, Skill] = {}
    seen_files: set[str] = set()
    problems: list[str] = []
    for root, mode, own in roots:
        bound = None if own else outside
        for path in _skill_files(root, mode, bound):
            real = os.path.realpath(path)
            if real in seen_files:
                continue
            seen_files.add(real)
            if bound is not None and not bound.allows(_kind(path), path, real):
                continue  # not read: asked about at the next message (`/skill` lists it)
            skill = _read_skill(path, Path(real), problems, bounded=bound is not None)
            if skill is None:
                continue
            if skill.name in skills:
                problems.append(f"{path}: skill {skill.name!r} is not used: {skills[skill.name].path} has that name.")
                continue
            skills[skill.name] = skill
    return list(skills.values()), problems


def _kind(path: Path) -> str:
    return "skills folder" if os.path.isdir(path) else "SKILL.md" if path.name == "SKILL.md" else "skill"


def _skill_files(root: Path, mode: Mode, bound: ReadsOutside | None) -> Iterator[Path]:
    budget = [MAX_ENTRIES]
    visited: set[str] = set()
    yield from _walk(root, root, mode, 0, budget, visited, bound)


def _walk(folder: Path, root: Path, mode: Mode, depth: int, budget: list[int], visited: set[str],
          bound: ReadsOutside | None) -> Iterator[Path]:
    real = os.path.realpath(folder)
    if depth > MAX_DEPTH or real in visited or budget[0] <= 0:
        return
    if bound is not None and os.path.isdir(folder) and not bound.allows("skills folder", folder, real):
        yield folder  # not listed: load_skills says so (a folder outside is asked about as a whole)
        return
    visited.add(real)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    budget[0] -= len(entries)
    if any(e.name == "SKILL.md" and _is_file(e) for e in entries):
        yield folder / "SKILL.md"
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        if _is_dir(entry):
            yield from _walk(Path(entry.path), root, mode, depth + 1, budget, visited, bound)
        elif mode == "pi" and folder == root and entry.name.endswith(".md") and _is_file(entry):
            yield Path(entry.path)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _read_skill(path: Path, real: Path, problems: list[str], *, bounded: bool) -> Skill | None:
    try:
        front, _ = read_front_matter(real)
    except FrontMatterError as err:
        problems.append(f"{path} {err}; the skill is skipped.")
        return None
    description = front.get("description")
    folder = path.parent.name
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{path}: no description in its front matter; the skill is skipped.")
        return None
    given = front.get("name") if isinstance(front.get("name"), str) and front.get("name") else folder
    assert isinstance(given, str)
    name = sanitize_line(given)
    if len(name) > MAX_NAME_KEPT or not name:
        problems.append(f"{path}: its name is {'over ' + str(MAX_NAME_KEPT) + ' characters' if name else 'empty'}; "
                        "the skill is skipped.")
        return None
    notes = _name_problems(given, folder)
    if name != given:
        notes.append("its name has control characters (they are left out)")
    shown = sanitize_line(description)
    if len(shown) > MAX_DESCRIPTION:
        notes.append(f"its description is over {MAX_DESCRIPTION:,} characters (it is cut there)")
        shown = shown[: MAX_DESCRIPTION - 1] + "…"
    if notes:
        problems.append(f"{path}: {'; '.join(notes)} (used all the same).")
    return Skill(name, shown, path, path.parent, front.get("disable-model-invocation") is not True, bounded)


def _name_problems(name: str, folder: str) -> list[str]:
    notes = []
    if name != folder:
        notes.append(f"the name {name!r} is not its folder's ({folder!r})")
    if len(name) > MAX_NAME:
        notes.append(f"the name is over {MAX_NAME} characters")
    if not re.fullmatch(r"[a-z0-9-]+", name) or name.startswith("-") or name.endswith("-") or "--" in name:
        notes.append("the name should be lower-case a-z, 0-9 and single hyphens")
    return notes


def _xml(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
            .replace("'", "&apos;"))


@dataclass(frozen=True)
class SkillsListing:
    """The system prompt's section about skills, and the skills its bounds left out."""

    text: str
    listed: int
    left_out: tuple[str, ...] = ()

    def note(self) -> str | None:
        """The one line that says the bound was hit (None: every skill is listed)."""
        if not self.left_out:
            return None
        n = len(self.left_out)
        names = ", ".join(self.left_out[:5]) + (", …" if n > 5 else "")
        return (f"{n} skill{'s are' if n != 1 else ' is'} not listed to the model ({names}): the system prompt "
                f"lists at most {MAX_LISTED} skills in {MAX_LISTED_BYTES // 1000} KB. /skill NAME still uses "
                f"{'them' if n != 1 else 'it'}.")


def skills_listing(skills: list[Skill]) -> SkillsListing:
    """The system prompt's section (Pi's words and XML; "" when none is listed), within
    MAX_LISTED skills and MAX_LISTED_BYTES of entries, in the order they were found (the project's
    first); a skill whose entry does not fit is left out and the section says how many were."""
    shown = [s for s in skills if s.model_invocable]
    if not shown:
        return SkillsListing("", 0)
    entries: list[str] = []
    left_out: list[str] = []
    budget = MAX_LISTED_BYTES
    for s in shown:
        entry = "\n".join(["  <skill>", f"    <name>{_xml(s.name)}</name>",
                           f"    <description>{_xml(s.description)}</description>",
                           f"    <location>{_xml(str(s.path))}</location>", "  </skill>"])
        size = len(entry.encode("utf-8", "surrogatepass")) + 1
        if len(entries) >= MAX_LISTED or size > budget:
            left_out.append(s.name)
            continue
        entries.append(entry)
        budget -= size
    lines = ["# Skills", "",
             "The following skills provide specialized instructions for specific tasks.",
             "Use the read tool to load a skill's file when the task matches its description.",
             "When a skill file references a relative path, resolve it against the skill directory (parent of "
             "SKILL.md / dirname of the path) and use that absolute path in tool commands.", "", "<available_skills>",
             *entries, "</available_skills>"]
    if left_out:
        lines += ["", f"({len(left_out)} more skill{'s are' if len(left_out) != 1 else ' is'} not listed here: the list "
                  "is bounded. The person can still use them with /skill NAME.)"]
    return SkillsListing("\n".join(lines), len(entries), tuple(left_out))


def skills_prompt(skills: list[Skill]) -> str:
    """The system prompt's section about skills (see `skills_listing`), or "" when none is listed."""
    return skills_listing(skills).text


def skill_block(skill: Skill, text: str, real: Path | None = None) -> str:
    """What `/skill NAME text` sends: the skill's body in Pi's block, then the text (the file is
    read now, as it is: from `real`, where it was found to be)."""
    _, body = read_front_matter(real or skill.path)
    block = (f'<skill name="{skill.name}" location="{skill.path}">\nReferences are relative to {skill.base_dir}.\n\n'
             f"{body.strip()}\n</skill>")
    return f"{block}\n\n{text}" if text.strip() else block
