"""Writing the theme back to config.toml: the rest of the user's file stays byte for byte."""

from __future__ import annotations

import os
import stat
import tomllib

import pytest

from treechat.config.settings import ConfigError, parse_config
from treechat.config.write import with_setting, write_setting

USER_FILE = '''# my treechat config
model = "openai/gpt-4.1-mini"   # the usual one
thinking = "low"

# a local box
[providers.box]
base_url = "http://127.0.0.1:8080/v1"
api_key = "sk-keep-me-exactly"
models = ["qwen3-8b"]
'''


def test_an_existing_theme_line_changes_and_keeps_its_comment():
    text = USER_FILE.replace('thinking = "low"\n', 'thinking = "low"\ntheme = "nord"  # dark, please\n')
    new = with_setting(text, "theme", "gruvbox")
    assert new == text.replace('theme = "nord"  # dark, please', 'theme = "gruvbox"  # dark, please')


def test_without_one_it_goes_before_the_first_table_and_its_comment():
    new = with_setting(USER_FILE, "theme", "textual-light")
    assert new == USER_FILE.replace('thinking = "low"\n\n# a local box',
                                    'thinking = "low"\n\ntheme = "textual-light"\n\n# a local box')
    assert parse_config(new).theme == "textual-light"
    assert tomllib.loads(new)["providers"] == tomllib.loads(USER_FILE)["providers"]


def test_a_file_without_tables_gets_it_at_the_end_even_without_a_final_newline():
    assert with_setting('model = "a/b"', "theme", "nord") == 'model = "a/b"\ntheme = "nord"\n'
    assert with_setting("", "theme", "nord") == 'theme = "nord"\n'


def test_windows_line_endings_stay():
    text = USER_FILE.replace("\n", "\r\n")
    new = with_setting(text, "theme", "nord")
    assert "\r\ntheme = \"nord\"\r\n" in new and "\n" not in new.replace("\r\n", "")


def test_a_theme_line_inside_a_multiline_string_or_a_table_is_not_the_setting():
    text = 'system_prompt = """\ntheme = "not-a-setting"\n"""\n\n[providers.x]\nbase_url = "http://h/v1"\n'
    new = with_setting(text, "theme", "nord")
    assert 'theme = "not-a-setting"' in new and tomllib.loads(new)["theme"] == "nord"
    assert tomllib.loads(new)["system_prompt"] == 'theme = "not-a-setting"\n'
    assert new.index('theme = "nord"') > new.index('"""\n\n')  # after the string, before the table


def test_it_refuses_rather_than_guess():
    with pytest.raises(ConfigError, match="does not parse"):
        with_setting('model = "a/b\n', "theme", "nord")
    with pytest.raises(ConfigError, match="without changing something else"):
        with_setting('theme.name = "x"\n', "theme", "nord")  # a dotted key: not ours to rewrite
    with pytest.raises(ConfigError, match="not a setting treechat writes"):
        with_setting(USER_FILE, "api_key", "sk-never")


def test_the_file_is_replaced_atomically_with_its_permissions(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE, "utf-8")
    path.chmod(0o640)
    write_setting(path, "theme", "nord")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.read_text("utf-8") == with_setting(USER_FILE, "theme", "nord")
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temporary file left behind


def test_a_missing_file_is_created_private(tmp_path):
    path = tmp_path / "sub" / "config.toml"
    write_setting(path, "theme", "nord")
    assert path.read_text("utf-8") == 'theme = "nord"\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlinked_config_is_written_where_it_points(tmp_path):
    real = tmp_path / "dotfiles" / "treechat.toml"
    real.parent.mkdir()
    real.write_text(USER_FILE, "utf-8")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    write_setting(link, "theme", "nord")
    assert link.is_symlink() and 'theme = "nord"' in real.read_text("utf-8")


def test_a_broken_file_is_left_alone(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('model = "a/b\n', "utf-8")
    with pytest.raises(ConfigError):
        write_setting(path, "theme", "nord")
    assert path.read_text("utf-8") == 'model = "a/b\n'


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_folder_is_one_error(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE, "utf-8")
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write"):
            write_setting(path, "theme", "nord")
    finally:
        tmp_path.chmod(0o700)
    assert path.read_text("utf-8") == USER_FILE
