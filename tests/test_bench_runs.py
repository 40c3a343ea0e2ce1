"""The TUI benchmark still measures the App it is given (its figures are asserted nowhere: they
are for bench/README, compared as ratios). `bench/tui.py --only tree` wraps the storage call and
the index the App uses to load a tree; when the App moved to `get_tree_columns` the bench kept
timing `get_tree_rows` and died on a KeyError, unnoticed until someone ran it. This runs the
quick tree bench (10k entries, ~5 s) and checks that every figure it promises came out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_tree_bench_reports_the_reload_and_the_keys(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "bench/tui.py", "--quick", "--only", "tree"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = {d["bench"]: d for d in map(json.loads, done.stdout.splitlines())}
    reload, keys = figures["tui.tree_100k"], figures["tui.tree_keys"]
    assert reload["tree_entries"] == reload["entries"] == 10_000  # the whole tree was timed, not a path
    for part in ("read_ms", "index_ms", "set_rows_ms", "render_ms"):
        assert reload[part] >= 0
    assert keys["keys"] == 24 and keys["p95_ms"] > 0
