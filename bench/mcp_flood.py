"""An idle chat next to an MCP server that floods it with notifications (issue 36): the CPU this
process spends while nothing else happens.

    .venv/bin/python bench/mcp_flood.py [--seconds 10] [--count 5000000]

The fake stdio server (tests/mcp/fake_server.py --flood N) sends logging, progress and
tools/list_changed notifications in turn, as fast as its stdout pipe takes them, once it has
listed its tools. The manager is the one the app runs (McpManager, its tools offered through
`on_change` as the controller does). Prints one JSON line: the CPU seconds of this process over
the wall seconds measured after the server is ready (`cpu_percent`), what the server's Gate took
and dropped, and how many times it listed the tools again.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # before bench/ (whose storage.py would shadow the storage package)

from treechat.mcp.config import McpServerConfig, ServerSpec  # noqa: E402
from treechat.mcp.manager import McpManager  # noqa: E402

FAKE = ROOT / "tests" / "mcp" / "fake_server.py"


async def run(seconds: float, count: int) -> dict[str, object]:
    config = McpServerConfig(command=sys.executable, args=[str(FAKE), "--flood", str(count)], trust=True)
    changes = 0

    def changed(line: str | None) -> None:
        nonlocal changes
        changes += 1
        manager.tools()  # what the controller does on a change: the tools offered again

    with tempfile.TemporaryDirectory() as cwd:
        manager = McpManager([ServerSpec("loud", config, "config.toml", 10.0, 30.0)], cwd=cwd, on_change=changed)
        manager.start()
        await manager.wait_started()
        server = manager.servers["loud"]
        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)  # idle: what the flood alone costs
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        counts = getattr(server, "counts", None)
        await manager.close()
    return {"bench": "mcp_flood", "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "cpu_percent": round(100 * cpu / wall, 1), "changes": changes,
            "relists": getattr(server, "relists", None),
            "taken": getattr(counts, "taken", None), "dropped": getattr(counts, "dropped", None),
            "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--count", type=int, default=5_000_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.seconds, args.count))))


if __name__ == "__main__":
    main()
