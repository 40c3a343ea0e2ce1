"""The README's key and command tables are generated from the keymap and the command table."""

from treechat.docs import README, render
from treechat.tui_actions import COMMANDS
from treechat.widgets.keymap import SLASH_COMMANDS


def test_readme_sections_are_generated_and_current():
    text = README.read_text(encoding="utf-8")
    assert "<!-- keys:start -->" in text and "<!-- commands:start -->" in text
    assert render(text) == text, "README.md is out of date: run `python -m app.docs`"


def test_every_slash_command_the_composer_knows_has_an_action():
    assert {c.name for c in COMMANDS} == set(SLASH_COMMANDS)
