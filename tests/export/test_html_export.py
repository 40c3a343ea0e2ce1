"""`export_html` on a branched session: every entry of every branch is in the one file, the page
loads nothing from anywhere, the writes are whole, progress is reported; and the CLI's --format html."""

from __future__ import annotations

import base64
import hashlib
import io
import re
from pathlib import Path

import pytest

from tests.fixtures import PI_FIXTURES
from treechat.cli.main import main
from treechat.export.html import export_html
from treechat.storage.base import EntryCursor

from .helpers import audit, branched_session, parse, payload, record_text


async def exported(storage, tmp_path: Path) -> str:
    out = tmp_path / "session.html"
    result = await export_html(storage, out)
    assert result.path == out and result.bytes == out.stat().st_size
    return out.read_text(encoding="utf-8")


async def test_every_entry_of_every_branch_is_in_the_file(catalog, tmp_path):
    built = await branched_session(catalog)
    data = payload(await exported(built.storage, tmp_path))
    stored = await built.storage.get_entries()
    records = {r[0]: r for r in data["entries"]}
    assert [r[0] for r in data["entries"]] == [e.id for e in stored]  # all of them, in append order
    for entry in stored:
        record = records[entry.id]
        assert record[1] == entry.parent_id and record[2] == entry.type and record[4] == entry.timestamp
        text = record_text(record)
        for expected in built.texts.get(entry.id, []):
            assert expected in text, (entry.type, expected)
    # both branches after a2 are there, and the leaf and labels the page marks
    assert records[built.ids["u2"]][1] == records[built.ids["u3"]][1] == built.ids["a2"]
    assert data["session"]["leaf"] == await built.storage.get_leaf_id() == built.ids["label"]
    assert data["labels"] == {built.ids["a3"]: "alpha-label"}
    stats = await built.storage.get_session_stats()
    assert data["session"]["name"] == "Planner session"
    assert data["session"]["stats"]["entries"] == stats.entry_count and data["session"]["stats"]["cost"] == 0.05


async def test_markdown_code_tables_and_links_are_rendered(catalog, tmp_path):
    built = await branched_session(catalog)
    data = payload(await exported(built.storage, tmp_path))
    body = {r[0]: r for r in data["entries"]}[built.ids["a1"]][6]
    doc = parse(body)
    tags = [t for t, _ in doc.tags]
    assert "strong" in tags and "table" in tags
    assert any(t == "pre" and a.get("class") == "hl" for t, a in doc.tags)  # highlighted by Pygments
    assert any(t == "span" and a.get("class") == "kn" for t, a in doc.tags)  # `import` is a keyword token
    assert ("td", {"class": "align-right"}) in doc.tags  # alignment as a class, not a style attribute
    link = next(a for t, a in doc.tags if t == "a")
    assert link["href"] == "https://docs.python.org/3/library/tomllib.html"
    assert link["rel"] == "noopener noreferrer nofollow"
    # thinking and the tool call fold; a long tool result is cut with a "show all" button
    assert [a.get("class") for t, a in doc.tags if t == "details"] == ["thinking", "call"]
    result = parse({r[0]: r for r in data["entries"]}[built.ids["t1"]][6])
    assert ("div", {"class": "clip"}) in result.tags
    assert any(t == "button" and a.get("class") == "show-all" for t, a in result.tags)
    # user text is shown as written (not Markdown); a stored image is an inline data: URL
    user = parse({r[0]: r for r in data["entries"]}[built.ids["u4"]][6])
    assert ("img", {"class": "attachment", "alt": "attached image (image/png)",
                    "src": "data:image/png;base64,iVBORw0KGgo="}) in user.tags


async def test_usage_models_and_compaction_ranges_are_recorded(catalog, tmp_path):
    built = await branched_session(catalog)
    records = {r[0]: r for r in payload(await exported(built.storage, tmp_path))["entries"]}
    assert records[built.ids["a1"]][7]["usage"] == [100, 20, 0, 0, 0.01]
    assert records[built.ids["a3"]][7]["model"] == "anthropic/claude-other"
    assert records[built.ids["model"]][7]["model"] == "anthropic/claude-sonnet-4-5"
    compaction = records[built.ids["compaction"]][7]
    # what the app keeps in context beside the summary (transform_path): from firstKept up to it
    assert compaction["kept"] == [built.ids[k] for k in ("u3", "a4", "bash", "custom", "ext")]
    assert compaction["tokensBefore"] == 5000 and compaction["tokensAfter"] == 1200
    assert compaction["trigger"] == "manual"


async def test_the_page_loads_nothing_and_allows_only_its_own_script_and_style(catalog, tmp_path):
    built = await branched_session(catalog)
    html = await exported(built.storage, tmp_path)
    doc = parse(html)
    csp = next(a["content"] for t, a in doc.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    policy = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert policy["default-src"] == "'none'" and policy["img-src"] == "data:"
    assert policy["base-uri"] == "'none'" and policy["form-action"] == "'none'"

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    scripts = [(a, raw) for (t, a), raw in zip([t for t in doc.tags if t[0] == "script"], doc.raw["script"])]
    assert [a for a, _ in scripts] == [{"type": "application/json", "id": "session-data"}, {}]
    assert policy["script-src"] == digest(scripts[1][1])  # the page's own script, by hash, nothing else
    (style,) = doc.raw["style"]
    assert policy["style-src"] == digest(style)
    assert "url(" not in style and "@import" not in style and "@font-face" not in style
    # no element points anywhere: the only URL attribute is the empty data: icon
    urls = [(t, k, v) for t, a in doc.tags for k, v in a.items() if k in {"src", "href", "srcset", "action", "poster"}]
    assert urls == [("link", "href", "data:,")]
    page_tags = [(t, a) for t, a in doc.tags if t not in {"meta", "link", "style", "script"}]
    assert audit(page_tags) == []
    # and the bodies the script puts on the page are clean too (one https link, one data: image)
    for record in payload(html)["entries"]:
        assert audit(parse(record[6]).tags) == [], record[0]


def test_printing_opens_what_the_screen_folds():
    """Print (static check; the browser tests print for real): the script opens every closed
    <details> before printing and closes them after, and the print stylesheet shows them and the
    clipped tool output even with no print event."""
    from treechat.export.html.page import content_security_policy, csp_hash, page_script, page_style

    script = page_script()
    before = script[script.index("addEventListener('beforeprint'"):]
    assert "querySelectorAll('details')" in before.split("});", 1)[0]
    assert ".open = true" in before.split("});", 1)[0]
    after = script[script.index("addEventListener('afterprint'"):]
    assert ".open = false" in after.split("});", 1)[0]
    prints = re.findall(r"@media print \{(.*?)\n\}", page_style(), re.S)
    assert any("details::details-content" in block and "content-visibility: visible" in block for block in prints)
    assert any(".clip { max-height: none; }" in block for block in prints)
    # the script and the stylesheet as changed are the ones the policy allows
    policy = content_security_policy()
    assert f"script-src {csp_hash(script)}" in policy and f"style-src {csp_hash(page_style())}" in policy


async def test_stream_and_path_give_the_same_page_apart_from_the_export_time(catalog, tmp_path):
    built = await branched_session(catalog)
    from_path = await exported(built.storage, tmp_path)
    text = io.StringIO()
    binary = io.BytesIO()
    r1 = await export_html(built.storage, text)
    r2 = await export_html(built.storage, binary)
    assert r1.path is None and r1.entries == len(await built.storage.get_entries())
    stamp = re.compile(r'"exported":"[^"]*"')
    assert stamp.sub("", text.getvalue()) == stamp.sub("", from_path) == stamp.sub("", binary.getvalue().decode())
    assert r2.bytes == len(binary.getvalue())


class Recorder:
    def __init__(self) -> None:
        self.total: float | None = None
        self.done = 0.0

    def advance(self, amount: float = 1) -> None:
        self.done += amount

    def update(self, *, completed: float | None = None, total: float | None = None,
               description: str | None = None) -> None:
        self.total = total if total is not None else self.total
        self.done = completed if completed is not None else self.done


async def test_progress_counts_every_entry(catalog, tmp_path, monkeypatch):
    import treechat.export.html.export as module

    monkeypatch.setattr(module, "PAGE_SIZE", 4)  # several pages on a small session
    built = await branched_session(catalog)
    bar = Recorder()
    result = await export_html(built.storage, tmp_path / "p.html", progress=bar)
    assert bar.total == bar.done == result.entries == len(await built.storage.get_entries())


class Failing:
    """A storage whose second page of entries cannot be read."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0
        self.session_id = inner.session_id

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def get_entries(self, cursor: EntryCursor | None = None):
        self.calls += 1
        if self.calls == 2:
            raise OSError("disk went away")
        return await self.inner.get_entries(cursor)


async def test_a_failed_export_leaves_the_earlier_file_and_no_debris(catalog, tmp_path, monkeypatch):
    import treechat.export.html.export as module

    monkeypatch.setattr(module, "PAGE_SIZE", 4)
    built = await branched_session(catalog)
    out = tmp_path / "keep.html"
    out.write_text("earlier export")
    with pytest.raises(OSError):
        await export_html(Failing(built.storage), out)
    assert out.read_text() == "earlier export"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


async def test_an_empty_session_exports(catalog, tmp_path):
    storage = await catalog.create()
    data = payload(await exported(storage, tmp_path))
    assert data["entries"] == [] and data["session"]["leaf"] is None


# ---------------------------------------------------------------- command line


@pytest.fixture(params=["sqlite", "jsonl"])
def home(request, tmp_path):
    return ["--home", str(tmp_path / "home"), "--storage", request.param]


def test_cli_exports_html_to_a_file_and_to_stdout(capsys, home, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-sentinel-never-exported")
    fixture = PI_FIXTURES / "large-session.jsonl"
    if not fixture.exists():
        pytest.skip(f"Pi fixture missing: {fixture}")
    assert main(["import", str(fixture), *home]) == 0
    sid = capsys.readouterr().out.strip()
    out = tmp_path / "s.html"
    assert main(["export", sid, "--format", "html", "-o", str(out), *home]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""  # no progress bar when stderr is not a terminal
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert len(payload(page)["entries"]) == 1018
    assert "sk-ant-sentinel" not in page
    assert main(["export", sid[:13], "--format", "html", *home]) == 0
    assert capsys.readouterr().out.startswith("<!DOCTYPE html>")


def test_cli_export_to_a_missing_folder_is_one_line(capsys, home, tmp_path):
    assert main(["import", str(PI_FIXTURES / "large-session.jsonl"),
                 *home]) == 0
    sid = capsys.readouterr().out.strip()
    assert main(["export", sid, "--format", "html", "-o", str(tmp_path / "no" / "such" / "x.html"), *home]) == 1
    err = capsys.readouterr().err
    assert err.startswith("treechat: ") and len(err.strip().splitlines()) == 1
