"""Ctrl+C while `-p` (and `--mode json`) waits for a reply: the run stops, the partial reply is
kept, the exit status is 130 and stderr says so in one line — never a traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from tests.fake_provider import FakeProvider


@pytest.mark.parametrize("mode", [(), ("--mode", "json")], ids=["text", "json"])
async def test_ctrl_c_stops_the_reply_keeps_it_and_exits_130(tmp_path, mode) -> None:
    gate = asyncio.Event()
    async with FakeProvider() as fake:
        fake.script_openai(["the first words ", "never sent"], gate=gate, gate_after=1)
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "treechat", "--home", str(tmp_path), "-p", "hi", "--model", "openai/gpt-4.1-mini",
            "--tools", "", *mode, env=env, cwd=str(tmp_path), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await asyncio.wait_for(fake.until_requests(1), 60)
        assert proc.stdout is not None
        if not mode:  # the first words are out: the reply streams
            assert (await asyncio.wait_for(proc.stdout.read(16), 60)).startswith(b"the first")
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        gate.set()
    assert proc.returncode == 130, err
    text = err.decode()
    assert "interrupted; the partial reply was saved." in text and "Traceback" not in text
