"""config.toml's base_url and the *_BASE_URL variables: a URL no request could use is one clear
line naming where it is (never a traceback, a retry loop or "Ready"), and strict config names
every unknown or mistyped key at once."""

from __future__ import annotations

import pytest

from treechat.cli.main import main
from treechat.config.settings import ConfigError, load_settings
from treechat.llm.registry import ModelRefError, ModelRegistry

BAD_URLS = [
    ("http://127.0.0.1:99999/v1", "has port 99999, which is out of range (1-65535)"),
    ("http://127.0.0.1:0/v1", "has port 0, which is out of range (1-65535)"),
    ("http://127.0.0.1:abc/v1", "has port 'abc', which is not a number"),
    ("http://[::1/v1", "is not a URL (invalid IPv6 URL)"),
    ("http://local\x1bhost/v1", "contains a control character ('\\x1b' at position 13)"),
    ("localhost:8765/v1", "needs http:// or https:// at its start"),
    ("ftp://host/v1", "needs http:// or https://, not ftp://"),
    ("http:///v1", 'names no host, e.g. "http://127.0.0.1:8080/v1"'),
    (" http://127.0.0.1:8080/v1", "has spaces at its start or end"),
    ("http://my host/v1", "has a space in its host 'my host'"),
    ("", 'is empty: give a URL such as "http://127.0.0.1:8080/v1", or leave it out'),
]


def config(tmp_path, url: str) -> None:
    text = ('model = "local/m"\n\n[providers.local]\napi = "openai"\nbase_url = "URL"\nmodels = ["m"]\n'
            .replace("URL", url.replace("\x1b", "\\u001b")))
    (tmp_path / "config.toml").write_text(text, "utf-8")


@pytest.mark.parametrize("url,reason", BAD_URLS)
def test_a_bad_base_url_is_one_line_naming_the_key_the_file_and_the_line(tmp_path, url, reason) -> None:
    config(tmp_path, url)
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    message = str(err.value)
    assert message == f"{tmp_path / 'config.toml'}, line 5: providers.local.base_url {reason}."
    assert "\n" not in message and "\x1b" not in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "https://api.example.com/v1", "http://[::1]:11434/v1",
                                 "http://localhost:65535", "HTTPS://Example.COM/v1", "https://user:pw@llm.example/v1?k=1"])
def test_usable_base_urls_are_kept_as_written(tmp_path, url) -> None:
    config(tmp_path, url)
    settings = load_settings(tmp_path, env={})
    assert settings.providers["local"].base_url == url
    assert ModelRegistry(settings, env={}).resolve("local/m").base_url == url


def test_the_url_itself_is_never_repeated_it_may_hold_a_password(tmp_path) -> None:
    config(tmp_path, "user:s3cret@llm.example/v1")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert "needs http:// or https://" in str(err.value) and "s3cret" not in str(err.value)


def test_the_command_line_says_it_in_one_line(tmp_path, capsys) -> None:
    config(tmp_path, "http://[::1/v1")
    code = main(["--home", str(tmp_path), "-p", "hello"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == f"treechat: {tmp_path / 'config.toml'}, line 5: providers.local.base_url is not a URL (invalid IPv6 URL).\n"


@pytest.mark.parametrize("url,reason", [(u, r) for u, r in BAD_URLS if u])
def test_a_bad_base_url_in_the_environment_names_the_variable(url, reason) -> None:
    with pytest.raises(ModelRefError) as err:
        ModelRegistry(env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k"})
    message = str(err.value)
    assert message == f"OPENAI_BASE_URL (in the environment) {reason}; fix it or unset it."
    assert "\n" not in message and "\x1b" not in message


def test_every_bad_variable_is_named_and_an_empty_one_is_unset() -> None:
    with pytest.raises(ModelRefError) as err:
        ModelRegistry(env={"OPENAI_BASE_URL": "ftp://h/v1", "ANTHROPIC_BASE_URL": "localhost:1"})
    assert "OPENAI_BASE_URL (in the environment) needs" in str(err.value)
    assert "ANTHROPIC_BASE_URL (in the environment) needs" in str(err.value)
    assert ModelRegistry(env={"OPENAI_BASE_URL": ""}).resolve("openai/gpt-4.1").base_url == "https://api.openai.com/v1"


def test_a_variable_that_config_overrides_does_not_stop_anything(tmp_path) -> None:
    (tmp_path / "config.toml").write_text('[providers.openai]\nbase_url = "http://127.0.0.1:8080/v1"\n', "utf-8")
    registry = ModelRegistry(load_settings(tmp_path, env={}), env={"OPENAI_BASE_URL": "localhost:1/v1"})
    assert registry.resolve("openai/gpt-4.1").base_url == "http://127.0.0.1:8080/v1"


def test_every_unknown_key_is_named_at_once_in_one_line(tmp_path) -> None:
    (tmp_path / "config.toml").write_text('\ndefault_model = "x"\nthinkng = "low"\n', "utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert str(err.value) == (f"{tmp_path / 'config.toml'}, line 2: unknown key 'default_model' (did you mean 'model'?); "
                              "line 3: unknown key 'thinkng' (did you mean 'thinking'?).")


def test_unknown_keys_and_bad_values_in_different_tables_are_named_in_line_order(tmp_path) -> None:
    (tmp_path / "config.toml").write_text(
        '[providers.b]\nbase_url = "ftp://h/v1"\n\n[providers.a]\nbase_ulr = "http://x/v1"\n\n'
        '[compaction]\nreserve_tokens = -1\n', "utf-8")
    (tmp_path / "config.toml").write_text('thinking = "max"\n' + (tmp_path / "config.toml").read_text())
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'config.toml'}, line 1: thinking must be one of off, minimal")
    assert "; line 3: providers.b.base_url needs http:// or https://, not ftp://; " in message
    assert "; line 6: unknown key 'base_ulr' (did you mean 'base_url'?); " in message
    assert message.endswith("; line 9: compaction.reserve_tokens should be greater than or equal to 0.")
    assert "\n" not in message


def test_one_unknown_key_reads_as_it_always_did(tmp_path) -> None:
    (tmp_path / "config.toml").write_text('model = "a/b"\nzzz = 1\n', "utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, env={})
    assert str(err.value).startswith(f"{tmp_path / 'config.toml'}, line 2: unknown key 'zzz' (known keys: allow_reads_outside, compaction, ")
    assert str(err.value).count("line ") == 1
