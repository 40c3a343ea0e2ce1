"""`treechat doctor`'s facts and how they are shown: aligned text for people, JSON for machines.

Facts quote config.toml, the environment and servers (a model name, a provider's name, an error
text), so every field goes through the one sanitiser on its way out: control characters become
visible placeholders in the text, \\uXXXX escapes in the JSON (issue 21: an OSC in a model name
reached the terminal raw)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from treechat.storage.json_types import JsonObject
from treechat.text.sanitize import json_for_terminal, visible_line

Status = Literal["ok", "warn", "fail", "info"]
MARKS: dict[str, str] = {"ok": "✓", "warn": "!", "fail": "✗", "info": "·"}
ASCII_MARKS: dict[str, str] = {"ok": "+", "warn": "!", "fail": "x", "info": "-"}
_ASCII = str.maketrans({"→": "->", "…": "...", "·": "-", "—": "-", "“": '"', "”": '"', "×": "x"})
SECTIONS = (("install", "Install"), ("files", "Files"), ("models", "Models"), ("terminal", "Terminal"))


@dataclass(frozen=True)
class Check:
    """One fact: `detail` is one line; a problem (warn, fail) says what to do in `fix`. `data`
    holds the same fact for machines. No field ever holds a key or any part of one."""

    id: str  # "config", "provider.openai", "terminal.keys"
    label: str  # the left column
    status: Status
    detail: str
    fix: str | None = None
    data: JsonObject = field(default_factory=dict)

    @property
    def section(self) -> str:
        head = self.id.split(".", 1)[0]
        if head in ("treechat", "python", "textual", "platform", "modes"):
            return "install"
        if head in ("config", "data", "database", "jsonl", "postgres"):
            return "files"
        if head == "terminal":
            return "terminal"
        return "models"


def failed(checks: list[Check]) -> bool:
    return any(c.status == "fail" for c in checks)


def render_text(checks: list[Check], *, ascii_only: bool = False) -> str:
    """One line per fact under its section, marks and labels aligned; a problem's fix on the
    line below it, under the detail."""
    marks = ASCII_MARKS if ascii_only else MARKS
    checks = [Check(c.id, visible_line(c.label), c.status, visible_line(c.detail),
                    visible_line(c.fix) if c.fix else c.fix, c.data) for c in checks]
    width = max((len(c.label) for c in checks), default=0) + 2
    out: list[str] = []
    for section, title in SECTIONS:
        rows = [c for c in checks if c.section == section]
        if not rows:
            continue
        out.append(title)
        for c in rows:
            out.append(f"  {marks[c.status]} {c.label.ljust(width)}{c.detail}")
            if c.fix and c.status != "ok":
                out.append(f"    {' ' * width}→ {c.fix}")
        out.append("")
    problems = [c for c in checks if c.status == "fail"]
    warnings = [c for c in checks if c.status == "warn"]
    if problems:
        out.append(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} to fix"
                   + (f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''}." if warnings else "."))
    else:
        out.append("Ready." + (f" {len(warnings)} warning{'s' if len(warnings) != 1 else ''}." if warnings else ""))
    text = "\n".join(out) + "\n"
    # a stream that cannot show the marks (LANG=C) gets the same report in ASCII, never an error
    return text.translate(_ASCII).encode("ascii", "replace").decode("ascii") if ascii_only else text


def render_json(checks: list[Check], version: str) -> str:
    report = {
        "ok": not failed(checks),
        "version": version,
        "checks": [{"id": c.id, "section": c.section, "label": c.label, "status": c.status, "detail": c.detail,
                    "fix": c.fix, "data": c.data} for c in checks],
    }
    return json_for_terminal(json.dumps(report, ensure_ascii=False, indent=2)) + "\n"
