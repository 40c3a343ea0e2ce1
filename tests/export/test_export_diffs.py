"""The Markdown and HTML exports show an edit's diff: fenced as `diff` in Markdown, coloured lines in
the page (escaped, inside its Content-Security-Policy: checked in a real headless Chromium where it
is installed), and a checkpoint as the files it recorded, never its blobs."""

from __future__ import annotations

import pytest

from treechat.agent.tools import make_tools
from treechat.export.html import export_html
from treechat.export.markdown import render_markdown
from treechat.llm.abort import AbortSignal
from treechat.session.session import Session
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from treechat.workspace.history import FileHistory
from treechat.workspace.recorder import SessionRecorder

from .chromium import CHROMIUM, Chromium
from .helpers import audit, parse, payload

HOSTILE = "<script>window.__pwned='diff'</script>```"


async def allow(change) -> bool:
    return True


async def edited_session(tmp_path):
    """A session whose model wrote a file, then edited it (real tools, a real checkpoint)."""
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    catalog = await open_catalog("memory", tmp_path)
    session = await Session.open(await catalog.create(cwd=str(work)))
    recorder = SessionRecorder(session, FileHistory())
    edit, write = make_tools(["edit", "write"], cwd=work, approve=allow, recorder=recorder)
    await session.append_message(UserMessage(content="make notes"))
    for call_id, tool, args in (("c1", write, {"path": "notes.txt", "content": f"alpha\nbeta\n{HOSTILE}\n"}),
                                ("c2", edit, {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]})):
        await session.append_message(AssistantMessage(content=[ToolCall(id=call_id, name=tool.name, arguments=args)],
                                                      stop_reason="toolUse"))

        async def on_update(_):
            pass

        result = await tool.execute(call_id, tool.validate(tool.prepare_arguments(args)), AbortSignal(), on_update)
        assert not result.is_error, result.content
        await session.append_message(ToolResultMessage(tool_call_id=call_id, tool_name=tool.name,
                                                       content=result.content, details=result.details))
    await session.append_message(AssistantMessage(content=[TextContent(text="done")]))
    return catalog, session


async def test_markdown_shows_the_diff_fenced_safely(tmp_path) -> None:
    catalog, session = await edited_session(tmp_path)
    ctx = await session.build_session_context()
    text = render_markdown("notes", ctx.messages)
    assert "````diff\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+gamma\n" in text
    assert "\n````\n" in text  # longer than the ``` inside the file
    await catalog.close()


async def test_the_page_shows_the_diff_escaped_and_the_checkpoint_without_its_blobs(tmp_path) -> None:
    catalog, session = await edited_session(tmp_path)
    page = tmp_path / "page.html"
    await export_html(session.storage, page)
    html = page.read_text()
    records = {r[0]: r[6] for r in payload(html)["entries"]}
    edit = next(body for body in records.values() if "+gamma" in body)
    assert '<span class="dr">-beta</span>' in edit and '<span class="da">+gamma</span>' in edit
    assert "&lt;script&gt;window.__pwned" in edit and audit(parse(edit).tags) == []
    checkpoint = next(body for body in records.values() if "files changed by" in body)
    assert "notes.txt: created" in checkpoint
    entries = await session.storage.find_entries("custom")
    blob = next(iter(entries[0].data["blobs"].values()))
    assert blob not in html
    await catalog.close()


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium)")
async def test_the_diff_in_a_browser_is_coloured_and_runs_nothing(tmp_path) -> None:
    catalog, session = await edited_session(tmp_path)
    page = tmp_path / "page.html"
    await export_html(session.storage, page)
    await catalog.close()
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        browser.wait_for("document.documentElement.dataset.ready === '1'")
        browser.wait_for("document.querySelector('#main pre.diff') !== null")
        colour = "(s => getComputedStyle(document.querySelector('#main pre.diff ' + s)).color)"
        added, removed, context = (browser.eval(f"{colour}('.{k}')") for k in ("da", "dr", "dc"))
        assert len({added, removed, context}) == 3  # three colours: the stylesheet applies (the CSP let it)
        text = browser.eval("document.getElementById('main').innerText")
        assert "notes.txt +1 −1" in text and "+gamma" in text and "<script>window.__pwned='diff'</script>" in text
        assert browser.eval("window.__pwned === undefined")
        urls = browser.requested_urls()
        assert urls and all(u.startswith("file://") for u in urls) and browser.console_messages() == []
