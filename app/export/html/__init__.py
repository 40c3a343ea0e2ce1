"""Self-contained HTML export of a whole session tree (`treechat export --format html`, `/export x.html`).

    result = await export_html(storage, "session.html", progress=bar)

One file, no network requests: the stylesheet, the script and the session's data are inline, and a
Content-Security-Policy forbids anything else. Every text from a model, a tool or a user is
cleaned of terminal control sequences and escaped; see render.py and page.py.
"""

from .export import HtmlExportResult, export_html

__all__ = ["HtmlExportResult", "export_html"]
