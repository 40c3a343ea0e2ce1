"""The page around the data: head with the Content-Security-Policy, the inlined stylesheet and
script (package data), the inert JSON block, and the static skeleton the script fills in.

The CSP allows exactly this page's own `<style>` and `<script>` (by SHA-256 hash), images only
from `data:` URLs, and nothing else: no request leaves the page, no inline handler or injected
script runs even if some markup slipped through.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache
from importlib import resources

from treechat.storage.json_types import Json

from .render import code_css, esc

DATA_ELEMENT_ID = "session-data"


SCRIPT_PARTS = ("page.js", "page_tree.js", "page_branch.js", "page_start.js")


@lru_cache(maxsize=1)
def page_script() -> str:
    """The page's script: its parts in order, in one strict function scope (one <script>, one hash)."""
    folder = resources.files(__package__)
    parts = [folder.joinpath(name).read_text(encoding="utf-8") for name in SCRIPT_PARTS]
    text = "(function () {\n'use strict';\n" + "\n".join(parts) + "})();\n"
    # The script is inlined: it must not be able to end its own element early.
    assert "</script" not in text.lower() and "<!--" not in text
    return text


@lru_cache(maxsize=1)
def page_style() -> str:
    base = resources.files(__package__).joinpath("page.css").read_text(encoding="utf-8")
    light, dark = code_css()
    text = (f"{base}\n/* code: Pygments 'default' (light, print) and 'github-dark' */\n"
            f"@media print, (prefers-color-scheme: light) {{\n{light}\n}}\n"
            f"@media screen and (prefers-color-scheme: dark) {{\n{dark}\n}}\n")
    assert "</style" not in text.lower()
    return text


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy() -> str:
    return "; ".join([
        "default-src 'none'",
        f"script-src {csp_hash(page_script())}",
        f"style-src {csp_hash(page_style())}",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
    ])


def json_for_script(value: Json) -> str:
    """JSON that cannot end or confuse the <script> element holding it: every `<`, `>` and `&`
    is a \\u escape (JSON.parse reads them back), so `</script>` or `<!--` never appears."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def document_head(title: str, generator: str) -> str:
    """Everything up to the opening of the data element (its JSON follows, streamed)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="{esc(generator)}">
<title>{esc(title)}</title>
<link rel="icon" href="data:,">
<style>{page_style()}</style>
</head>
<body>
<div id="app">
<header id="top"><h1 id="title">{esc(title)}</h1><p id="meta"></p></header>
<nav id="side" aria-label="Conversation tree">
<div id="tools">
<input id="search" type="search" placeholder="Filter the tree…" aria-label="Filter the tree">
<select id="mode" aria-label="Which entries the tree shows">
<option value="default">messages</option><option value="no-tools">no tool output</option>
<option value="user-only">your prompts</option><option value="labeled">labelled</option>
<option value="all">everything</option>
</select>
<button type="button" id="to-leaf" title="Show the active leaf">● leaf</button>
</div>
<div id="tree-info"></div>
<div id="tree" tabindex="0"><div id="tree-spacer"></div><div id="tree-rows"></div></div>
</nav>
<main id="main" tabindex="-1"><p class="loading">Loading the session…</p></main>
</div>
<noscript><p class="noscript">This export shows its conversation with JavaScript; it is turned off in this
browser. The page makes no network requests either way.</p></noscript>
<script type="application/json" id="{DATA_ELEMENT_ID}">"""


def document_tail() -> str:
    return f"</script>\n<script>{page_script()}</script>\n</body>\n</html>\n"
