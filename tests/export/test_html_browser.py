"""The exported page in a real headless Chromium (Debian's `chromium` package): it draws the tree,
a click on a tree node shows that node's branch, `‹ n/m ›` switches branches, the URL fragment
selects a message, nothing is requested from anywhere, and hostile content runs nothing.

Skipped, with the reason, where /usr/bin/chromium is not installed (`apt-get install chromium`; .ci/run installs
it where it can).
"""

from __future__ import annotations

import json

import pytest

from treechat.export.html import export_html
from treechat.storage import open_catalog

from .chromium import CHROMIUM, Chromium
from .helpers import branched_session, hostile_session

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (Debian: apt-get install chromium); browser checks skipped"
)

READY = "document.documentElement.dataset.ready === '1'"


def main_text(browser: Chromium) -> str:
    return browser.eval("document.getElementById('main').innerText")


def click_element(browser: Chromium, js_element: str) -> None:
    """Scroll the element into view and click its centre with the mouse."""
    rect = browser.eval(f"(() => {{ const e = {js_element}; if (!e) return null; e.scrollIntoView({{block: 'center'}});"
                        " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    assert rect, f"nothing to click: {js_element}"
    browser.click(*rect)


def tree_row(text: str) -> str:
    return f"[...document.querySelectorAll('#tree .row .p')].find(e => e.textContent.includes({json.dumps(text)}))"


def assert_quiet(browser: Chromium) -> None:
    """Only the page itself was requested, and no CSP refusal or script error was logged."""
    urls = browser.requested_urls()
    assert urls and all(u.startswith("file://") for u in urls), urls
    assert browser.console_messages() == []


@pytest.fixture
async def catalog(tmp_path):
    cat = await open_catalog("memory", tmp_path)
    yield cat
    await cat.close()


async def test_clicking_a_tree_node_shows_its_branch(catalog, tmp_path):
    built = await branched_session(catalog)
    page = tmp_path / "branched.html"
    await export_html(built.storage, page)
    ids = built.ids
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        browser.wait_for(READY)
        # the active branch is shown first: beta, with the compaction; the alpha answer is not
        text = main_text(browser)
        assert "finalanswerword done" in text and "betabranch what about JSON?" in text
        assert "alphabranch" not in text  # (the alpha answer is named once, by the label notice)
        assert browser.eval("document.getElementById('tree').innerText").count("alphaanswer use PyYAML") == 1
        # the leaf (a label entry, hidden in the default view) is marked on its nearest shown ancestor
        assert "finalanswerword done" in browser.eval("document.querySelector('#tree .leaf-tag').parentElement.innerText")
        # the messages the compaction replaced are marked, the ones it kept are not
        outside = browser.eval("[...document.querySelectorAll('#main .card.outside')].map(c => c.innerText)")
        assert any("alphaprompt" in t for t in outside) and not any("betabranch" in t for t in outside)

        click_element(browser, tree_row("alphaanswer use PyYAML"))
        browser.wait_for("document.getElementById('main').innerText.includes('alphaanswer use PyYAML')")
        text = main_text(browser)
        assert "alphabranch what about YAML?" in text and "answertwo" in text and "alphaprompt" in text
        assert "betabranch" not in text and "finalanswerword" not in text
        assert browser.eval("location.hash") == "#" + ids["a3"]
        assert browser.eval("document.querySelector('#main .card.sel').innerText").count("alphaanswer") == 1
        assert "alpha-label" in browser.eval("document.querySelector('#main .card.sel').innerText")

        # ‹ 1/2 › on the alpha question: the next alternative is the beta question
        assert browser.eval("[...document.querySelectorAll('#main .sibs b')].map(b => b.textContent)") == ["1/2", "1/2"]
        click_element(browser, "[...document.querySelectorAll('#main .card')].find(c => c.innerText.includes('alphabranch'))"
                               ".querySelector('.sibs button:last-child')")
        browser.wait_for("document.getElementById('main').innerText.includes('betabranch')")
        assert browser.eval("location.hash") == "#" + ids["u3"]
        assert "alphabranch" not in main_text(browser)

        # "show all" opens a cut tool result
        click_element(browser, "document.querySelector('#main .show-all')")
        assert browser.eval("document.querySelector('#main .clip').classList.contains('open')")
        assert_quiet(browser)

    # a link with a fragment opens on that message's branch
    with Chromium(tmp_path / "profile2") as browser:
        browser.open(page.as_uri() + "#" + ids["summary"])
        browser.wait_for(READY)
        text = main_text(browser)
        assert "branchsummaryword we tried another approach" in text and "tomllib" not in text
        assert browser.eval("document.querySelector('#main .card.sel').innerText").count("branchsummaryword") == 1
        assert_quiet(browser)


async def test_hostile_content_runs_nothing_in_a_browser(catalog, tmp_path):
    built = await hostile_session(catalog)
    page = tmp_path / "hostile.html"
    await export_html(built.storage, page)
    entries = await built.storage.get_entries()
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        browser.wait_for(READY)
        assert browser.eval("document.title") == "</title><script>window.__pwned='title'</script>"
        for i, entry in enumerate(entries):  # show every entry's card, one after the other
            if entry.type == "leaf":
                continue
            browser.eval(f"location.hash = '#' + encodeURIComponent({json.dumps(entry.id)})")
            browser.wait_for(f"document.querySelector('#main .card.sel')?.dataset.i === '{i}'")
            click_element(browser, "document.querySelector('#main .card.sel')")
            browser.eval("document.querySelectorAll('#main details').forEach(d => d.open = true)")
        assert browser.eval("window.__pwned === undefined")
        assert browser.eval("document.querySelectorAll('script').length") == 2
        assert browser.eval("document.querySelectorAll('#main img, #main iframe, #main svg, #main style').length") == 0
        text = main_text(browser)
        assert "<script>window.__pwned = 'script'</script>" in text and "[click me](javascript:" in text
        assert_quiet(browser)


DETAILS_OPEN = "[...document.querySelectorAll('#main details')].map(d => d.open)"


async def test_printing_opens_every_folded_part_and_closes_them_again(catalog, tmp_path):
    built = await branched_session(catalog)
    page = tmp_path / "branched.html"
    await export_html(built.storage, page)
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri() + "#" + built.ids["a1"])  # the branch with thinking, a call, a long result
        browser.wait_for(READY)
        before = browser.eval(DETAILS_OPEN)
        assert len(before) >= 3 and not any(before)
        browser.eval("document.querySelector('#main details').open = true")  # one the reader opened
        # what the page looks like while it prints (this listener runs after the page's own)
        browser.eval("window.__printed = null; addEventListener('beforeprint', () => { window.__printed = {"
                     " open: [...document.querySelectorAll('#main details')].map(d => d.open),"
                     " text: document.getElementById('main').innerText }; })")
        browser.send("Page.printToPDF", {})  # a real print: beforeprint, the layout, afterprint
        printed = browser.eval("window.__printed")
        assert printed and all(printed["open"]) and len(printed["open"]) == len(before)
        assert "thinkingword the user wants tomllib" in printed["text"] and "pyproject.toml" in printed["text"]
        # afterwards each is as the reader left it
        assert browser.eval(DETAILS_OPEN) == [True] + [False] * (len(before) - 1)
        assert_quiet(browser)


async def test_print_media_shows_folded_and_clipped_content_without_the_script(catalog, tmp_path):
    """Where a print is laid out with no print event (print media emulated), the stylesheet alone
    shows the closed <details> and the clipped tool output whole."""
    built = await branched_session(catalog)
    page = tmp_path / "branched.html"
    await export_html(built.storage, page)
    shown = ("[...document.querySelectorAll('#main details')].map(d => !d.open &&"
             " d.getBoundingClientRect().height > d.querySelector('summary').getBoundingClientRect().height + 4)")
    clipped = "[...document.querySelectorAll('#main .clip')].map(c => c.scrollHeight > c.clientHeight + 1)"
    with Chromium(tmp_path / "profile") as browser:
        browser.open(page.as_uri() + "#" + built.ids["a1"])
        browser.wait_for(READY)
        assert not any(browser.eval(shown)) and any(browser.eval(clipped))  # on screen: folded, cut
        browser.send("Emulation.setEmulatedMedia", {"media": "print"})
        assert all(browser.eval(shown)) and len(browser.eval(shown)) >= 3
        assert not any(browser.eval(clipped))
        assert "resultline 39 of the file" in main_text(browser)
        assert browser.eval("[...document.querySelectorAll('#main .show-all')].every(b => !b.offsetParent)")
        assert_quiet(browser)
