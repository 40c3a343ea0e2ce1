"""One line about what opening a session file had to set aside (JSONL: unreadable lines, broken
parent cycles, a leaf marker naming nothing), for the app's notice and the CLI's stderr.

Opening never fails on such a file and never changes it; saying so is the difference between
"set aside, reported" and "silently dropped" (issue 14, issue 15).
"""

from __future__ import annotations

from treechat.storage.base import ImportReport, SessionStorage


def load_warning(storage: SessionStorage) -> str | None:
    report = getattr(storage, "load_report", None)
    if not isinstance(report, ImportReport):
        return None  # SQLite and memory sessions were checked when they were written
    parts = []
    if report.skipped:
        parts.append(f"{report.skipped} unreadable line{'s' if report.skipped != 1 else ''} skipped")
    if report.repaired:
        parts.append(f"{report.repaired} parent cycle{'s' if report.repaired != 1 else ''} broken")
    if not parts and not report.problems:
        return None
    first = f" (first: {report.problems[0]})" if report.problems else ""
    summary = ", ".join(parts) if parts else report.problems[0]
    where = getattr(storage, "path", None) or "this session"
    return f"{where}: {summary}{first if parts else ''}; the file was left as it is"
