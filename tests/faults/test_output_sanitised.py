"""Issue 21 item 5: every line treechat writes goes through the one sanitiser. `treechat doctor`
shows what config.toml says as `-p` does: an OSC or a CSI in a model or provider name is ␛ text,
never sent to the terminal (before, the report carried them raw); so do the session ids an import
prints and a file name in a progress bar."""

from __future__ import annotations

import asyncio
import io
import json
import socket

from treechat.cli.main import main
from treechat.doctor.checks import run_doctor
from treechat.progress import progress

HOSTILE = "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202e"  # TOML escapes: OSC title, clear, 8-bit CSI, bidi


def closed_servers() -> tuple[tuple[str, str], ...]:
    ports = []
    for _ in range(4):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    return tuple((name, f"http://127.0.0.1:{port}") for name, port in zip(("ollama", "lmstudio", "llamacpp", "vllm"),
                                                                             ports))


def doctor(home, *, as_json: bool = False) -> str:
    out = io.StringIO()
    asyncio.run(run_doctor(str(home), as_json=as_json, out=out, env={"TERM": "xterm-256color"},
                           servers=closed_servers(), encoding="utf-8", tmux=lambda option: None))
    return out.getvalue()


def write_config(home) -> None:
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "evil{HOSTILE}/model{HOSTILE}"\n\n'
        f'[providers."evil{HOSTILE}"]\nbase_url = "http://127.0.0.1:9/v1"\nmodels = ["model{HOSTILE}"]\n')


def test_the_text_report_shows_control_characters_as_placeholders(tmp_path):
    home = tmp_path / "home"
    write_config(home)
    text = doctor(home)
    assert "evil␛]0;pwned␇␛[2J<U+009B>31m<U+202E>" in text
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")


def test_the_json_report_escapes_them_and_keeps_the_value(tmp_path):
    home = tmp_path / "home"
    write_config(home)
    text = doctor(home, as_json=True)
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
    report = json.loads(text)
    assert any("evil\x1b]0;pwned\x07" in value for value in strings(report))  # the same value, escaped


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_import_prints_a_hostile_session_id_as_text(tmp_path, capsys):
    sid = "evil\x1b]0;pwned\x07\u202e"
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2025-01-01T00:00:00Z",
                                   "cwd": "/"}) + "\n" + json.dumps(
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}}) + "\n")
    assert main(["--home", str(tmp_path / "home"), "import", str(session)]) == 0
    out, err = capsys.readouterr()
    assert out == "evil␛]0;pwned␇<U+202E>\n"
    assert not any(ch in out + err for ch in "\x07\u202e")


def test_a_progress_description_is_shown_as_text():
    out = io.StringIO()
    with progress("Importing \x1b]0;pwned\x07[bold]x[/bold]", total=10, stream=out, force=True) as bar:
        bar.update(description="Importing \x1b]2;again\x07")
        bar.advance(10)
    text = out.getvalue()
    assert "\x1b]0;pwned" not in text and "\x1b]2;again" not in text and "\x07" not in text
    assert "␛]0;pwned␇[bold]x[/bold]" in text or "␛]2;again␇" in text
