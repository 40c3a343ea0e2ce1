"""The command line's modes: `--mode` is its own option (argparse took it for `--model`), modes
that make no sense are one line, `--help` and `doctor` say what there is, SIGTERM ends an RPC
server cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.fake_provider import FakeProvider
from treechat.cli.parser import build_parser

from .conversations import USAGE
from .driver import Driver, ProcessChannel
from .helpers import TREECHAT, Place, child


def test_mode_is_not_read_as_model() -> None:
    args = build_parser().parse_args(["--mode", "json", "-p", "x"])
    assert args.mode == "json" and args.model is None
    for argv in (["--mod", "fake/x"], ["sessions", "--js"], ["--ephem"], ["doctor", "--jso"]):
        with pytest.raises(SystemExit):  # no option is taken by a prefix of its name any more
            build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", [["--mode", "json"], ["--mode", "text"], ["--mode", "rpc", "-p", "hi"],
                                  ["--mode", "json", "sessions"], ["--mode", "xml", "-p", "hi"]])
def test_modes_that_make_no_sense_are_one_line(argv, tmp_path) -> None:
    done = subprocess.run([TREECHAT, *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TREECHAT_HOME": str(tmp_path)})
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--mode" in done.stderr


def test_help_and_doctor_say_which_modes_there_are(tmp_path) -> None:
    shown = subprocess.run([TREECHAT, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--mode {text,json,rpc}" in shown and "Pi's RPC protocol" in shown
    done = subprocess.run([TREECHAT, "--home", str(tmp_path), "doctor", "--json"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TREECHAT_HOME": str(tmp_path)})
    modes = next(c for c in json.loads(done.stdout)["checks"] if c["id"] == "modes")
    assert modes["section"] == "install" and modes["data"]["modes"] == ["app", "text", "json", "rpc"]


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def test_sigterm_stops_the_run_and_ends_the_server(fake, tmp_path) -> None:
    fake.script_openai(["part", "ial", " never"], usage=USAGE, hang_after=2)
    driver, channel = await child(Place.make(tmp_path, fake))
    await driver.call({"type": "prompt", "message": "go"})
    await driver.until("message_update", 2)
    channel.proc.send_signal(signal.SIGTERM)
    await driver.until("agent_end")  # the run stopped, and said so, before the end
    await driver.close()
    assert channel.proc.returncode == 0 and b"Traceback" not in channel.stderr
    assert driver.of("message_end")[-1]["message"]["stopReason"] == "aborted"


async def test_the_options_a_pi_client_passes_are_understood(fake, tmp_path) -> None:
    """Pi's RpcClient starts `pi --mode rpc --provider P --model M`, Pi's docs add `--no-session`."""
    fake.script_openai(["hello"], usage=USAGE)
    place = Place.make(tmp_path, fake)
    channel = await ProcessChannel.start([TREECHAT, "--mode", "rpc", "--provider", "fake", "--model", "fake-model",
                                          "--no-session"], cwd=str(place.work), env=place.env())
    driver = Driver(channel)
    try:
        await driver.call({"type": "prompt", "message": "hi"})
        await driver.until("agent_end")
        state = (await driver.call({"type": "get_state"}))["data"]
    finally:
        await driver.close()
    assert state["model"]["id"] == "fake-model" and state["model"]["provider"] == "fake"
    assert not (place.home / "treechat.db").exists()  # --no-session: nothing kept
