"""Skills and prompt templates as one row (issue 37): the model gets the whole text as before; the
transcript shows what the person typed and `skill pdf loaded` / `template review`, whose text opens
with Enter on the selected message, a click or Ctrl+O; a reopened session shows them the same way,
and edit & resend gives back the command that made the message."""

from __future__ import annotations

from treechat.storage.model import MessageEntry, UserMessage
from treechat.text.expanded import FIELD
from treechat.widgets.composer.view import Composer
from treechat.widgets.transcript.message_view import ExpansionLine
from treechat.widgets.transcript.view import Transcript

from .conftest import idle, screen_text, type_text, wait_for

SKILL = """---
name: pdf
description: Work with PDF files.
---

# PDF processing

Use pypdf to read PDF files: PdfReader(path).pages.
"""

TEMPLATE = """---
description: Review a file
---
Review the file $1 carefully and list every bug in it.
"""


def project(tmp_path) -> None:
    skill = tmp_path / ".agents" / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    prompts = tmp_path / ".treechat" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text(TEMPLATE)


def last_user_content(fake) -> str:
    content = fake.requests[-1].body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


async def send(pilot, app, fake, text: str) -> None:
    fake.script_openai(["ok"])
    count = len(fake.requests)
    await type_text(pilot, text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(fake.requests) > count and idle(app), what="the reply", rounds=1000)
    await pilot.pause()


def below_header(app) -> str:
    """The screen without its first line (the header's title is the session's first prompt)."""
    return "\n".join(screen_text(app).split("\n")[1:])


def rows(app) -> list[ExpansionLine]:
    return list(app.ui(Transcript).query(ExpansionLine))


async def test_a_skill_is_one_row_and_its_text_goes_to_the_model(make_app, fake, tmp_path) -> None:
    project(tmp_path)
    async with make_app(size=(100, 30)) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded, what="the skills found")
        await send(pilot, app, fake, "/skill:pdf summarize the report")
        sent = last_user_content(fake)
        assert sent.startswith('<skill name="pdf" location="') and "Use pypdf to read PDF files" in sent
        assert sent.endswith("</skill>\n\nsummarize the report")  # as before: the block, then the words
        text = screen_text(app)
        assert "summarize the report" in text and "▸ skill pdf loaded" in text
        assert "Use pypdf" not in text and "<skill" not in text
        await pilot.press("ctrl+o")  # with the tools: every fold opens
        await wait_for(pilot, lambda: "Use pypdf to read PDF files" in screen_text(app), what="the skill's text")
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: "Use pypdf" not in screen_text(app), what="folded again")
        transcript = app.ui(Transcript)
        transcript.focus()
        await pilot.press("end", "up", "enter")  # Enter on the selected prompt opens its skill
        await wait_for(pilot, lambda: "Use pypdf to read PDF files" in screen_text(app), what="opened by Enter")
        assert [r.expanded for r in rows(app)] == [True]
        await pilot.press("enter")
        await wait_for(pilot, lambda: not rows(app)[0].expanded, what="closed by Enter")
        await pilot.press("e")  # edit & resend: the command that made it, read again when sent
        await wait_for(pilot, lambda: app.ui(Composer).text == "/skill:pdf summarize the report",
                       what="the command to edit")


async def test_a_template_is_its_command_and_one_row_also_after_reopening(make_app, fake, tmp_path) -> None:
    project(tmp_path)
    async with make_app(size=(100, 30)) as (app, pilot):
        await wait_for(pilot, lambda: app.chat.extensions_loaded, what="the templates found")
        await send(pilot, app, fake, "/review foo.py")
        assert last_user_content(fake) == "Review the file foo.py carefully and list every bug in it."
        text = below_header(app)
        assert "/review foo.py" in text and "▸ template review" in text and "carefully" not in text
        await pilot.click(app.ui(Transcript).query_one(ExpansionLine))
        await wait_for(pilot, lambda: "carefully and list every bug" in screen_text(app), what="opened by a click")
        stored = next(e.message for e in await app.chat.session.get_branch()
                      if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage))
        assert (stored.model_extra or {})[FIELD] == {"template": "review", "typed": "/review foo.py"}
        hits = await app.chat.catalog.search("carefully")  # search finds what was sent
        assert any(h.entry_id for h in hits)
        session_id = app.chat.session_id
    async with make_app(size=(100, 30), session_id=session_id) as (app, pilot):
        await wait_for(pilot, lambda: "▸ template review" in screen_text(app), what="the row after reopening")
        assert "/review foo.py" in below_header(app) and "carefully" not in below_header(app)
