"""Terminal-safety benchmark (issue 15): the sanitisers on 10 MB of text, benign and hostile.

    .venv/bin/python bench/termsafe.py [--mb 10] [--repeat 3]

Best-of-`repeat` ms for `sanitize` (the app's stripping), `visible` (placeholders for stdout, stderr
and files), `visible_line` (listings, error lines) and `json_for_terminal` (JSON outputs), on texts
of `--mb` million characters: plain ASCII, CJK, emoji, and hostile ones (an escape sequence every
100 characters, ESC alternating with a letter, nothing but controls). One JSON object per line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from treechat.text.sanitize import json_for_terminal, sanitize, visible, visible_line  # noqa: E402


def texts(size: int) -> dict[str, str]:
    def fill(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return {
        "ascii": fill("hello world, a plain reply. "),
        "cjk": fill("漢字かな交じり文の返事。"),
        "emoji": fill("ok 😀 "),
        "osc_every_100": fill("x" * 80 + "\x1b]52;c;ZXZpbA==\x07" + "\x9b2J"),
        "esc_alternating": fill("a\x1b"),
        "controls_only": fill("\x1b\x07\x9b\u202e\x00"),
    }


def best_ms(fn: Callable[[str], str], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return round(best * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps({"bench": "machine", "python": platform.python_version(), "cpus": os.cpu_count(),
                      "load1": round(os.getloadavg()[0], 2)}))
    size = int(args.mb * 1_000_000)
    fns: dict[str, Callable[[str], str]] = {"sanitize": sanitize, "visible": visible,
                                           "visible_line": visible_line, "json_for_terminal": json_for_terminal}
    for name, text in texts(size).items():
        row: dict[str, object] = {"bench": f"termsafe.{name}", "chars": len(text)}
        for fn_name, fn in fns.items():
            row[f"{fn_name}_ms"] = best_ms(fn, text, args.repeat)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
