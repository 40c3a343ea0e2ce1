"""`treechat doctor` with a server named by its URL (OPENAI_BASE_URL at a llama.cpp or vLLM
server, issue 37): green with what it serves, its first model the one used, and a silent or
refusing server named with what to do."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tests.fake_local_server import LocalServer
from tests.fake_provider import FakeProvider
from treechat.doctor.checks import run_doctor

from .conftest import closed_port

KEY = "sk-doctor-url-server-SECRET-77"


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def doctor(tmp_path: Any, env: dict[str, str], quiet: Any) -> tuple[int, dict[str, dict[str, Any]], str]:
    env = {"TERM": "xterm-256color", **env}
    out, text = io.StringIO(), io.StringIO()
    code = await run_doctor(str(tmp_path), as_json=True, out=out, env=env, servers=quiet, encoding="utf-8",
                            tmux=lambda option: None)
    await run_doctor(str(tmp_path), out=text, env=env, servers=quiet, encoding="utf-8", tmux=lambda option: None)
    return code, {c["id"]: c for c in json.loads(out.getvalue())["checks"]}, text.getvalue()


@pytest.mark.parametrize("key", [KEY, None])
async def test_a_key_and_a_base_url_are_green_naming_the_server_and_what_it_serves(fake, tmp_path, quiet_servers, key):
    LocalServer.vllm(fake)
    env = {"OPENAI_BASE_URL": f"{fake.base_url}/v1", **({"OPENAI_API_KEY": key} if key else {})}
    code, checks, text = await doctor(tmp_path, env, quiet_servers)
    assert code == 0, text
    line = checks["provider.openai"]
    assert line["status"] == "ok" and line["data"]["models"] == ["Qwen/Qwen3-8B"]
    assert f"{fake.base_url}/v1 (OPENAI_BASE_URL) · serves 1 model (Qwen/Qwen3-8B)" in line["detail"]
    assert ("key set (OPENAI_API_KEY)" if key else "needs no key") in line["detail"]
    assert checks["model"]["status"] == "ok" and checks["model"]["data"]["ref"] == "openai/Qwen/Qwen3-8B"
    assert "no provider has a key" not in text and KEY not in text


async def test_a_silent_server_is_named_and_nothing_else_can_answer(tmp_path, quiet_servers):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, checks, text = await doctor(tmp_path, {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY}, quiet_servers)
    assert code == 1
    assert checks["provider.openai"]["status"] == "warn" and "did not list its models" in checks["provider.openai"]["detail"]
    assert checks["model"]["status"] == "fail" and f"{url} (OPENAI_BASE_URL)" in checks["model"]["detail"]
    assert "--model openai/MODEL-ID" in checks["model"]["fix"]


async def test_a_refused_key_says_to_check_it(fake, tmp_path, quiet_servers):
    fake.script_status(401, {"error": {"message": "Incorrect API key"}}, path="/v1/models")
    _, checks, _ = await doctor(tmp_path, {"OPENAI_BASE_URL": f"{fake.base_url}/v1", "OPENAI_API_KEY": KEY},
                                quiet_servers)
    assert "HTTP 401" in checks["provider.openai"]["detail"] and "OPENAI_API_KEY" in checks["provider.openai"]["fix"]


async def test_the_server_on_a_usual_port_is_asked_once_under_its_name(fake, tmp_path):
    LocalServer.llama_cpp(fake)
    usual = (("llamacpp", fake.base_url),)  # the port llama.cpp's detection would ask
    _, checks, _ = await doctor(tmp_path, {"OPENAI_BASE_URL": f"{fake.base_url}/v1"}, usual)
    assert checks["provider.openai"]["data"]["models"] == ["model.gguf"]
    # asked once per report (the JSON one and the text one), as the server named, never as llamacpp
    assert "local.llamacpp" not in checks and [p.path for p in fake.probes] == ["/v1/models"] * 2


async def test_openai_itself_is_unchanged(tmp_path, quiet_servers):
    code, checks, _ = await doctor(tmp_path, {"OPENAI_API_KEY": KEY}, quiet_servers)
    assert checks["provider.openai"]["status"] == "ok" and "https://api.openai.com/v1" in checks["provider.openai"]["detail"]
    assert checks["model"]["status"] == "warn"  # a key, no model chosen: as before
