"""Text from a session to HTML fragments: Markdown, code, plain text — escaped, inert.

Everything a model, a tool or a user wrote passes through :func:`clean` (terminal control
sequences removed, as in the other exports) and is then escaped. Markdown is rendered by
markdown-it-py with raw HTML off; a link survives only with an http(s) or mailto target (any other
`[x](…)` stays literal text), and an image never loads: it becomes a link to its address. Code
blocks are highlighted by Pygments into CSS classes (the palettes are in the page's stylesheet).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]  # (Pygments ships no type hints)
from pygments.lexer import Lexer  # type: ignore[import-untyped]  # (no type hints)
from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped]  # (no type hints)
from pygments.util import ClassNotFound  # type: ignore[import-untyped]  # (no type hints)

from treechat.text.sanitize import sanitize

_SAFE_LINK = re.compile(r"(?:https?://|mailto:)", re.IGNORECASE)
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ALIGN = re.compile(r"text-align:\s*(left|right|center)")
# A code block longer than this is shown unhighlighted: Pygments takes ~1 s per MB, and an
# export must stay fast whatever a tool printed into a reply.
_HIGHLIGHT_LIMIT = 100_000
_CODE_CLASS = "hl"


def clean(text: object) -> str:
    """Text safe to escape into a page: control sequences gone, lone surrogates (which no UTF-8
    file can hold) replaced."""
    out = sanitize(text)
    if _SURROGATE.search(out):
        out = _SURROGATE.sub("\ufffd", out)
    return out


def esc(text: object) -> str:
    """Cleaned and escaped for element content or a quoted attribute."""
    return escape(clean(text), quote=True)


def plain(text: object, css_class: str = "text") -> str:
    """Preformatted-looking text (whitespace kept by CSS) in a div."""
    return f'<div class="{css_class}">{esc(text)}</div>'


def safe_link(url: str) -> bool:
    """Whether a Markdown link target may become an href: web and mail addresses only. Fragments,
    relative paths (meaningless beside a shared file), `javascript:`, `data:`, `file:` … stay text."""
    return bool(_SAFE_LINK.match(url.strip()))


def code_css(light_style: str = "default", dark_style: str = "github-dark") -> tuple[str, str]:
    """The token colours of highlighted code: (light, dark) rules scoped to `.hl`."""
    light = HtmlFormatter(style=light_style).get_token_style_defs(f".{_CODE_CLASS}")
    dark = HtmlFormatter(style=dark_style).get_token_style_defs(f".{_CODE_CLASS}")
    return "\n".join(light), "\n".join(dark)


class Renderer:
    """One Markdown engine and a lexer cache for a whole export (building them costs ~20 ms)."""

    def __init__(self) -> None:
        self._formatter = HtmlFormatter(nowrap=True)
        self._lexers: dict[str, Lexer | None] = {}
        md = MarkdownIt("commonmark", {"html": False, "highlight": self._highlight})
        md.enable(["table", "strikethrough"])
        md.validateLink = safe_link  # type: ignore[method-assign]  # markdown-it's hook for which links are kept
        md.add_render_rule("link_open", _link_open)
        md.add_render_rule("image", _image)
        md.add_render_rule("th_open", _cell_open)
        md.add_render_rule("td_open", _cell_open)
        self._md = md

    def markdown(self, text: object) -> str:
        source = clean(text)
        if not source.strip():
            return ""
        return f'<div class="md">{self._md.render(source)}</div>'

    def code(self, text: object, language: str = "") -> str:
        """A highlighted block (or a plain one when the language is unknown)."""
        source = clean(text)
        highlighted = self._highlight(source, language, "")
        return highlighted or f'<pre class="{_CODE_CLASS}"><code>{escape(source)}</code></pre>'

    def _lexer(self, language: str) -> Lexer | None:
        key = language.lower()
        if key not in self._lexers:
            try:
                self._lexers[key] = get_lexer_by_name(key, stripnl=False, ensurenl=False)
            except (ClassNotFound, ValueError):
                self._lexers[key] = None
        return self._lexers[key]

    def _highlight(self, code: str, language: str, _attrs: str) -> str:
        """markdown-it's hook: a full `<pre>` block, or "" to let it escape the code itself."""
        if not language or len(code) > _HIGHLIGHT_LIMIT:
            return ""
        lexer = self._lexer(language)
        if lexer is None:
            return ""
        from pygments import highlight  # type: ignore[import-untyped]  # (no type hints)

        body = highlight(code, lexer, self._formatter)
        return f'<pre class="{_CODE_CLASS}"><code>{body}</code></pre>'


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    # No referrer, no handle on this page, and search engines told the link is not ours.
    token.attrSet("rel", "noopener noreferrer nofollow")
    token.attrSet("target", "_blank")
    return self.renderToken(tokens, idx, options, env)


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image in Markdown is shown as a link to it: an <img> would fetch it when the page opens."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    label = f"[image: {escape(alt)}]"
    if not safe_link(src):
        return f'<span class="img-ref">{label}</span>'
    return (f'<a class="img-ref" href="{escape(src)}" rel="noopener noreferrer nofollow" '
            f'target="_blank">{label}</a>')


def _cell_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """Table alignment as a class: a style attribute would be refused by the page's CSP."""
    token = tokens[idx]
    style = str(token.attrGet("style") or "")
    if style:
        token.attrs.pop("style", None)
        found = _ALIGN.search(style)
        if found:
            token.attrSet("class", f"align-{found.group(1)}")
    return self.renderToken(tokens, idx, options, env)


def json_text(value: object, limit: int) -> str:
    """Readable JSON of arbitrary stored data, cut at `limit` characters (it is a record, not a dump)."""
    import json

    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… {len(text) - limit:,} more characters"
    return text
