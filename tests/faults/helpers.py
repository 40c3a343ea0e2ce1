"""Running treechat in real child processes for the fault suite: another user (read-only
storage), a file-size limit (a full disk), kill -9."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fixtures import PI_FIXTURES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PI_FIXTURES


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def can_mount_read_only() -> str | None:
    """None when a child can see a folder through a read-only bind mount (a private mount
    namespace: needs root or user namespaces), else why not."""
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", "mount --bind -o ro / / 2>&1"], capture_output=True,
                           text=True, timeout=10)
    return None if probe.returncode == 0 else f"cannot make a read-only mount here: {probe.stdout.strip()}"


def treechat(*argv: str, read_only: Path | None = None, fsize: int | None = None, timeout: float = 60) -> Any:
    """`python -m treechat ARGV` in a child; `read_only`: that folder is mounted read-only for it
    (EROFS, as on a read-only home), `fsize` caps the size of any file it writes (a full disk)."""

    def setup() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    cmd = [sys.executable, "-m", "treechat", *argv]
    if read_only is not None:
        cmd = ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(read_only), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), preexec_fn=setup, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def treechat_here(*argv: str) -> subprocess.CompletedProcess[str]:
    """`treechat ARGV` in this process, as the console script runs it (`cli.main`), its output
    captured: for a test where the process boundary is not the point (it saves a Python start
    and treechat's imports, about a second each). Not for the TUI, nor read-only or size limits."""
    import contextlib
    import io

    from treechat.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit:  # argparse's own errors
            code = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(["treechat", *argv], code, out.getvalue(), err.getvalue())


def one_line(done: Any) -> str:
    """The child failed with exactly one line on stderr and no traceback; that line."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0, done.stdout
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]
