"""The README's key and command tables are generated from the keymap and the command registry."""

from treechat.docs import README, render
from treechat.tui import TreechatApp


def test_readme_sections_are_generated_and_current():
    text = README.read_text(encoding="utf-8")
    assert "<!-- keys:start -->" in text and "<!-- commands:start -->" in text
    assert render(text) == text, "README.md is out of date: run `python -m treechat.docs`"


def test_every_slash_command_is_in_the_readme_with_its_help():
    text = README.read_text(encoding="utf-8")
    rows = TreechatApp.command_table()
    assert len(rows) == 22 and len({r.name for r in rows}) == len(rows)
    for row in rows:
        assert f"`/{row.name}" in text and row.help.replace("|", "\\|") in text, row.name


def test_every_toml_block_in_the_readme_is_a_valid_config():
    """The README's config examples use the code's keys (they once silently did not)."""
    import re

    from treechat.config.settings import parse_config

    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README shows no config example"
    for block in blocks:
        parse_config(block, "README.md")


def test_ci_runs_the_readmes_two_commands_as_a_new_user_types_them():
    """README's install-and-test command is what .ci/run runs, verbatim; and the install-and-start
    command installs the same way (issue 38: one install in CI)."""
    import re
    from pathlib import Path

    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", text[:3000], re.S)
    start, test = blocks[0].strip(), blocks[1].strip()
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), "the README's test command must be in .ci/run as it is"
    assert start.startswith("python3 -m venv .venv && .venv/bin/pip install -q -e .") and "treechat" in start
    assert ci.count("pip install") == 1, "CI installs once"
