"""What a question shows: nothing in its text can hide (issue 36: a payload after 60 blank lines
or 300 spaces, invisible characters, controls)."""

from __future__ import annotations

from treechat.widgets.question.shown import MAX_CHARS, shown_lines


def plain(text: str) -> list[str]:
    return [line.plain for line in shown_lines(text)]


def test_a_run_of_empty_lines_is_one_line_that_counts_them() -> None:
    assert plain("a\n\n\n\n\nb") == ["a", "┄ 4 empty lines ┄", "b"]
    assert plain("a\n\nb") == ["a", "", "b"]  # one or two are left as they are
    assert plain("a\n  \n\t\n \n" + "b") == ["a", "┄ 3 empty lines ┄", "b"]  # whitespace-only lines too


def test_long_runs_of_spaces_are_counted_and_indentation_stays() -> None:
    assert plain("echo fine" + " " * 300 + "; rm -rf ~") == ["echo fine␣×300; rm -rf ~"]
    assert plain("    indented") == ["    indented"]
    assert plain(" " * 100 + "far") == ["␣×100far"]
    assert plain("trailing   ") == ["trailing···"]
    assert plain("a\tb") == ["a⇥b"]


def test_invisible_characters_and_controls_are_named() -> None:
    assert plain("rm\u200b -rf\u00a0x") == ["rm<U+200B> -rf<U+00A0>x"]
    assert plain("a\U000e0041b") == ["a<U+E0041>b"]  # a Unicode tag (hidden ASCII)
    assert plain("x\x1b]52;c;QQ\x07\u202e") == ["x␛]52;c;QQ␇<U+202E>"]


def test_what_is_replaced_is_dim_and_the_text_is_not() -> None:
    [line] = shown_lines("a\u200bb")
    styles = {line.plain[span.start:span.end]: span.style for span in line.spans}
    assert styles == {"<U+200B>": "dim reverse"}


def test_a_huge_text_is_cut_and_says_how_much_more_there_is() -> None:
    lines = plain("x" * (MAX_CHARS + 5000))
    assert lines[-1] == f"… and 5,000 more characters not shown ({MAX_CHARS + 5000:,} in all)"
