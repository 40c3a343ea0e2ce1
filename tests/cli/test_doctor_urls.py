"""`treechat doctor` and provider URLs: whatever a base URL holds (config.toml, a *_BASE_URL
variable, a probe target), it is a line of the report, never a traceback."""

from __future__ import annotations

import pytest

from .test_doctor import by_id, report

KEY = "sk-doctor-url-SECRET-0123456789"


@pytest.mark.parametrize("url,reason", [
    ("http://127.0.0.1:99999/v1", "port 99999, which is out of range"),
    ("http://[::1/v1", "is not a URL (invalid IPv6 URL)"),
    ("http://127.0.0.1\\u001b:8080/v1", "contains a control character"),
    ("localhost:8765/v1", "needs http:// or https://"),
    ("ftp://host/v1", "needs http:// or https://, not ftp://"),
])
def test_a_bad_base_url_in_config_is_the_config_line_not_a_traceback(tmp_path, quiet_servers, url, reason):
    (tmp_path / "config.toml").write_text(f'[providers.local]\napi = "openai"\nbase_url = "{url}"\nmodels = ["m"]\n',
                                          "utf-8")
    code, text = report(tmp_path, quiet_servers, {"OPENAI_API_KEY": KEY})
    assert code == 1 and "Ready" not in text and "Traceback" not in text and "\x1b" not in text
    lines = [line for line in text.splitlines() if "providers.local.base_url" in line]
    assert len(lines) == 1 and lines[0].lstrip().startswith("✗ config") and "line 3" in lines[0] and reason in lines[0]
    assert "Terminal" in text and "✓ openai" in text  # the rest of the report follows


def test_a_bad_base_url_variable_is_a_line_of_its_own_and_the_rest_is_checked(tmp_path, quiet_servers):
    env = {"OPENAI_BASE_URL": "http://[::1/v1", "OPENAI_API_KEY": KEY, "ANTHROPIC_BASE_URL": "ftp://h/v1"}
    code, text = report(tmp_path, quiet_servers, env, as_json=True)
    checks = by_id(text)
    assert code == 1 and KEY not in text
    assert checks["env.OPENAI_BASE_URL"]["status"] == "fail"
    assert checks["env.OPENAI_BASE_URL"]["detail"] == "is not a URL (invalid IPv6 URL)"
    assert checks["env.OPENAI_BASE_URL"]["fix"] == "fix OPENAI_BASE_URL or unset it"
    assert checks["env.ANTHROPIC_BASE_URL"]["detail"] == "needs http:// or https://, not ftp://"
    assert checks["provider.openai"]["status"] == "ok" and checks["config"]["status"] == "info"
    _, plain = report(tmp_path, quiet_servers, env)
    assert "✗ OPENAI_BASE_URL" in plain and "Traceback" not in plain


def test_a_variable_config_overrides_is_not_a_problem(tmp_path, quiet_servers):
    (tmp_path / "config.toml").write_text('[providers.openai]\nbase_url = "https://llm.example/v1"\n', "utf-8")
    _, text = report(tmp_path, quiet_servers, {"OPENAI_BASE_URL": "localhost:1/v1", "OPENAI_API_KEY": KEY}, as_json=True)
    checks = by_id(text)
    assert "env.OPENAI_BASE_URL" not in checks
    assert checks["provider.openai"]["data"]["base_url"] == "https://llm.example/v1"


def test_a_probe_that_blows_up_is_a_line_of_the_report(tmp_path, quiet_servers):
    # a server address no connection can be made to (the port overflows the socket call)
    servers = (*quiet_servers, ("vllm", "http://127.0.0.1:99999"))
    code, text = report(tmp_path, servers, {"OPENAI_API_KEY": KEY}, as_json=True)
    checks = by_id(text)
    assert code == 1
    assert checks["local"]["status"] == "fail" and checks["local"]["detail"].startswith("could not be asked (")
    assert "TaskGroup" not in checks["local"]["detail"] and "\n" not in checks["local"]["detail"]
    assert checks["provider.openai"]["status"] == "ok" and "terminal.encoding" in checks
