"""The README's key and command tables are generated from the keymap and the command table."""

from treechat.docs import README, render
from treechat.tui import TreechatApp
from treechat.widgets.commands import SLASH_COMMANDS


def test_readme_sections_are_generated_and_current():
    text = README.read_text(encoding="utf-8")
    assert "<!-- keys:start -->" in text and "<!-- commands:start -->" in text
    assert render(text) == text, "README.md is out of date: run `python -m treechat.docs`"


def test_every_slash_command_has_a_handler_in_the_app():
    for command in SLASH_COMMANDS:
        assert callable(getattr(TreechatApp, f"cmd_{command.name}", None)), command.name


def test_every_toml_block_in_the_readme_is_a_valid_config():
    """The README's config examples use the code's keys (they once silently did not)."""
    import re

    from treechat.config.settings import parse_config

    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README shows no config example"
    for block in blocks:
        parse_config(block, "README.md")
