"""Progress bars appear on a terminal only; pipes and files stay clean."""

import io

from treechat.progress import progress


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    out = io.StringIO()
    with progress("Importing", 100, unit="bytes", stream=out) as bar:
        bar.advance(50)
        bar.update(completed=100)
    assert out.getvalue() == ""


def test_a_terminal_gets_a_bar_with_count_and_rate() -> None:
    out = io.StringIO()
    with progress("Importing", 4, unit="sessions", stream=out, force=True) as bar:
        for _ in range(4):
            bar.advance()
    assert "Importing" in out.getvalue()
