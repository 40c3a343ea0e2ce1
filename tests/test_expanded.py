"""A skill's or template's message is recognised wherever it goes (issue 37, app/text/expanded.py):
the skill from Pi's block in its text, the template from the field the message carries, through a
store, a fork, a Pi JSONL export and its import; `as_typed` is what `e` and ↑ give back."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from treechat.cli.storage import stream_export
from treechat.prompts.skills import Skill, skill_block
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import MessageEntry, TextContent, UserMessage
from treechat.storage.session_file import read_session_file
from treechat.text.expanded import FIELD, as_typed, expanded, expanded_message, skill_line, template_message


def skill_file(tmp_path: Path) -> Skill:
    path = tmp_path / "pdf" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("---\nname: pdf\ndescription: PDFs.\n---\n\n# PDF\n\nUse pypdf.\n")
    return Skill(name="pdf", description="PDFs.", path=path, base_dir=path.parent)


def test_a_skill_block_reads_back_as_the_skill_and_the_words(tmp_path) -> None:
    skill = skill_file(tmp_path)
    text = skill_block(skill, "summarize it")
    found = expanded(text)
    assert found is not None and (found.kind, found.name, found.typed) == ("skill", "pdf", "summarize it")
    assert found.body.endswith("# PDF\n\nUse pypdf.") and found.body.startswith("References are relative to")
    alone = expanded(skill_block(skill, ""))
    assert alone is not None and alone.typed == ""
    assert skill_line(text.split("\n", 1)[0]) == "/skill:pdf"
    assert as_typed(UserMessage(content=[TextContent(text=text)])) == "/skill:pdf summarize it"
    for plain in ("summarize it", "<skill>not one</skill>", 'see <skill name="x" location="y">\nz\n</skill>'):
        assert expanded(plain) is None and skill_line(plain) is None


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_a_template_keeps_what_was_typed_through_a_store_a_fork_and_a_pi_export(tmp_path, kind) -> None:
    catalog = await open_catalog(kind, tmp_path / "home")
    storage = await catalog.create(cwd=str(tmp_path))
    session = await Session.open(storage)
    sent = template_message("Review foo.py and list its bugs.", [], "review", "/review foo.py")
    entry_id = await session.append_message(sent)

    def check(message: object) -> None:
        found, files = expanded_message(message)
        assert found is not None and files == []
        assert (found.kind, found.name, found.typed, found.body) == ("template", "review", "/review foo.py",
                                                                     "Review foo.py and list its bugs.")
        assert as_typed(message) == "/review foo.py"

    reopened = await (await catalog.open(storage.session_id)).get_entry(entry_id)
    assert isinstance(reopened, MessageEntry)
    check(reopened.message)
    forked = await (await catalog.fork(storage.session_id, entry_id)).get_entry(entry_id)
    assert isinstance(forked, MessageEntry)
    check(forked.message)
    out = tmp_path / "export.jsonl"
    await stream_export(storage, str(out), io.StringIO())
    _, entries, _, _ = read_session_file(out)
    exported = next(e for e in entries if e.id == entry_id)
    assert isinstance(exported, MessageEntry) and FIELD in out.read_text()
    check(exported.message)
    await catalog.close()
