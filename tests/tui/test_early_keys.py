"""Keys typed while treechat starts arrive as typed (app/tui/early_keys.py).

The real `treechat` runs in a pseudo-terminal against the loopback fake. The moment it has taken
the terminal out of canonical mode (and before Textual's driver has: Ctrl+C is still a signal
then), "early words" and Enter are typed. Before the fix, the terminal was the shell's until the
driver started: Enter arrived as a newline in the composer and the message was never sent.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import termios
import time
from pathlib import Path

from .conftest import KEY

ANSI = re.compile(rb"\x1b\[[0-9;?<>=$ ]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMNOPXZ\\^_c]")
RUN = "import sys; from treechat.cli.main import main; sys.exit(main(sys.argv[1:]))"


async def test_a_message_typed_before_the_app_is_up_is_sent(tmp_path: Path, fake) -> None:
    import fcntl
    import pty
    import struct

    fake.script_openai(["ZQXEARLY ", "answer"])
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "TREECHAT_"))}
    env.update(TERM="xterm-256color", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=fake.base_url)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-c", RUN, "--home", str(home), "--model", "openai/fake-model"],
                  env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
    os.set_blocking(fd, False)
    out, typed, answered = b"", None, False
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and not answered:
            try:
                out += os.read(fd, 1 << 16)  # read what it writes (or it blocks on writing)
            except BlockingIOError:
                pass
            except OSError:
                break  # it ended
            if typed is None:
                lflag = termios.tcgetattr(fd)[3]
                if not lflag & termios.ICANON:
                    assert lflag & termios.ISIG, "the terminal was the shell's until Textual's driver took it"
                    os.write(fd, b"early words\r")
                    typed = len(out)
            answered = b"ZQXEARLY answer" in ANSI.sub(b"", out)
            await asyncio.sleep(0.001)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    assert typed is not None, "treechat never left canonical mode"
    assert answered, ANSI.sub(b"", out)[-600:]
    assert fake.requests and "early words" in str(fake.requests[0].body["messages"])
