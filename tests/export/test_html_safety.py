"""Hostile content in an exported page stays text: no script, handler, frame, style or script URL
comes from a message, a tool, a label, a name or an entry id, and no terminal sequence survives."""

from __future__ import annotations

from html import unescape

from treechat.export.html import export_html
from treechat.export.html.render import Renderer, safe_link

from .helpers import HOSTILE, audit, hostile_session, parse, payload, record_text


async def hostile_page(catalog, tmp_path) -> str:
    built = await hostile_session(catalog)
    out = tmp_path / "hostile.html"
    await export_html(built.storage, out)
    return out.read_text(encoding="utf-8")


async def test_the_document_has_only_its_own_two_scripts(catalog, tmp_path):
    doc = parse(await hostile_page(catalog, tmp_path))
    assert [t for t, _ in doc.tags].count("script") == 2
    assert [t for t, _ in doc.tags].count("style") == 1
    assert audit([(t, a) for t, a in doc.tags if t not in {"meta", "link", "style", "script"}]) == []
    # the session name and cwd are in the title and header as text
    assert "".join(doc.text).count("</title><script>window.__pwned='title'</script>") == 2


async def test_no_body_brings_markup_that_runs_or_loads(catalog, tmp_path):
    data = payload(await hostile_page(catalog, tmp_path))
    assert len(data["entries"]) >= 11  # (a file backend adds a leaf marker: the leaf is not the last entry)
    for record in data["entries"]:
        problems = audit(parse(record[6]).tags)
        assert problems == [], (record[0], problems)
        assert "javascript:" not in " ".join(str(v) for _, a in parse(record[6]).tags for v in a.values()).lower()


async def test_hostile_text_is_shown_as_text(catalog, tmp_path):
    data = payload(await hostile_page(catalog, tmp_path))
    records = {r[0]: r for r in data["entries"]}
    user = record_text(records['"><img src=x onerror="window.__pwned=\'id\'">'])
    for name in ("script", "img", "raw_block", "raw_anchor", "iframe", "svg", "style", "close_script"):
        assert HOSTILE[name] in user, name  # user text is shown verbatim
    reply = record_text(records["a1"])
    assert "<script>window.__pwned = 'script'</script>" in reply  # Markdown escapes raw HTML
    assert "[click me](javascript:window.__pwned='link')" in reply  # refused link: left as text
    assert "[data](data:text/html" in reply
    assert "[image: tracker]" in reply  # a remote image is a link to click, never fetched
    assert "image of type text/html not shown" in reply and "image of type image/png not shown" in reply
    assert records["a1"][7]["model"] == "<i>/<script>window.__pwned = 'script'</script>"  # shown via textContent


async def test_terminal_sequences_are_gone_everywhere(catalog, tmp_path):
    html = await hostile_page(catalog, tmp_path)
    for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert bad not in html
    result = record_text({r[0]: r for r in payload(html)["entries"]}["t1"])
    assert "beforeredafterevil" in result  # the sequences removed whole, the text around them kept


def test_links_are_kept_only_for_web_and_mail_addresses():
    for good in ("https://example.com/a?b=c", "HTTP://example.com", "mailto:someone@example.com"):
        assert safe_link(good)
    for bad in ("javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,x", "file:///etc/passwd",
                "vbscript:x", "#anchor", "relative/path", "//evil.example/x"):
        assert not safe_link(bad)


def test_markdown_renders_escaped():
    r = Renderer()
    out = r.markdown('Hi <b onclick="x">there</b> &amp; `<code>`\n\n<div>block</div>')
    assert "<b" not in out and "<div>block" not in out
    assert unescape("".join(parse(out).text)).count("<b onclick") == 1
    assert r.code("<script>", "no-such-language") == '<pre class="hl"><code>&lt;script&gt;</code></pre>'
    highlighted = r.code("x = '<script>'", "python")
    assert "<script>" not in highlighted and "&lt;script&gt;" in highlighted
