"""What a long reply costs in `--mode json`: Pi's protocol puts the whole message so far in every
`message_update` (twice: `message` and its event's `partial`), so the lines grow with the reply's
length times its pieces. Runs the real `treechat -p … --mode json` against the loopback fake
provider (and, with `--pi`, Pi 0.73.1's `pi --mode json` on the same reply), reading all stdout.

    python bench/protocols.py [--reply-kb 64,256] [--piece 256] [--pi node_modules/.bin/pi]

Prints one JSON object per line: who, the reply's size and pieces, the bytes written, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_provider import FakeProvider  # noqa: E402
from tests.protocols.helpers import TREECHAT, write_config  # noqa: E402
from tests.protocols.record_pi import _QUIET, _setup  # noqa: E402


async def one(who: str, pi: str | None, reply_kb: int, piece: int) -> dict[str, object]:
    async with FakeProvider() as fp:
        pieces = reply_kb * 1024 // piece
        fp.script_openai(["x" * (piece - 1) + "\n"] * pieces,
                         usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            if who == "pi":
                env = _setup(tmp, fp)
                argv = [pi or "pi", "--model", "fake/fake-model", "--no-session", *_QUIET, "--no-tools", "--mode",
                        "json", "go"]
            else:
                write_config(tmp / "home", fp)
                (tmp / "work").mkdir()
                env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
                env["TREECHAT_HOME"] = str(tmp / "home")
                argv = [TREECHAT, "--model", "fake/fake-model", "--mode", "json", "-p", "go"]
            start = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(*argv, cwd=tmp / "work", env=env,
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.DEVNULL)
            assert proc.stdout is not None
            written = 0
            while chunk := await proc.stdout.read(1 << 20):
                written += len(chunk)
            await proc.wait()
            return {"bench": "protocols.json_mode", "who": who, "reply_kb": reply_kb, "pieces": pieces,
                    "out_mb": round(written / 1e6, 1), "s": round(time.perf_counter() - start, 2),
                    "exit": proc.returncode}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reply-kb", default="64,256", help="reply sizes in KB, comma-separated")
    parser.add_argument("--piece", type=int, default=256, help="bytes per streamed piece")
    parser.add_argument("--pi", help="Pi 0.73.1's `pi`, to run the same replies through it too")
    args = parser.parse_args()
    for size in (int(s) for s in args.reply_kb.split(",")):
        for who in ("treechat", *(("pi",) if args.pi else ())):
            print(json.dumps(asyncio.run(one(who, args.pi, size, args.piece))), flush=True)


if __name__ == "__main__":
    main()
