"""Edits and checkpoints (issue 23): what edit, restore and the file history cost as they grow.

    .venv/bin/python bench/files.py [--quick]

Real tools on real files in a temporary folder, a real SQLite session: one JSON object per line.

| bench | meaning |
|---|---|
| `edit_large` | one edit in the middle of a file of `lines` lines through the edit tool (read, match, diff, write, checkpoint), median ms |
| `edits_session` | `edits` edits (each a checkpoint) of `files` files of ~40 KB: ms per edit, the bytes of their checkpoints |
| `history_load` | `FileHistory.load` of that session from a fresh catalog, median ms |
| `restore_plan` / `restore_apply` | planning and applying a restore of every file to the first prompt (as they were before the first edit), ms |
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from treechat.agent.tools import make_tools  # noqa: E402
from treechat.agent.tools.workfolder import Boundary  # noqa: E402
from treechat.llm.abort import AbortSignal  # noqa: E402
from treechat.session.session import Session  # noqa: E402
from treechat.storage import open_catalog  # noqa: E402
from treechat.storage.model import CustomEntry, UserMessage  # noqa: E402
from treechat.workspace.history import FileHistory, path_ids_of  # noqa: E402
from treechat.workspace.journal import Journal  # noqa: E402
from treechat.workspace.recorder import SessionRecorder  # noqa: E402
from treechat.workspace.restore import apply_restore, plan_restore  # noqa: E402


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def _first_path(data: object) -> str:
    """The first file a checkpoint names."""
    assert isinstance(data, dict)
    return str(data["files"][0]["path"])


async def allow(_: object) -> bool:
    return True


async def run(tool, call_id: str, **args) -> None:
    async def on_update(_: object) -> None:
        pass

    result = await tool.execute(call_id, tool.validate(tool.prepare_arguments(args)), AbortSignal(), on_update)
    assert not result.is_error, result.content


async def main(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        work = base / "work"
        (work / ".git").mkdir(parents=True)
        catalog = await open_catalog("sqlite", base / "home")
        session = await Session.open(await catalog.create(cwd=str(work)))
        first = await session.append_message(UserMessage(content="go"))
        recorder = SessionRecorder(session, FileHistory())
        (edit,) = make_tools(["edit"], cwd=work, approve=allow, recorder=recorder)

        lines = 20_000 if quick else 200_000
        (work / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(lines)))
        times = []
        for i in range(5):
            t0 = time.perf_counter()
            await run(edit, f"b{i}", path="big.txt", edits=[{"oldText": f"line {lines // 2 + i} of",
                                                             "newText": f"LINE {lines // 2 + i} of"}])
            times.append((time.perf_counter() - t0) * 1000)
        emit(bench="edit_large", lines=lines, bytes=(work / "big.txt").stat().st_size,
             median_ms=round(statistics.median(times), 1))

        files, edits = (5, 50) if quick else (20, 400)
        for n in range(files):
            (work / f"f{n}.py").write_text("".join(f"def function_{k}():\n    return {k}\n\n" for k in range(1200)))
        t0 = time.perf_counter()
        for i in range(edits):
            n, k = i % files, i // files
            await run(edit, f"e{i}", path=f"f{n}.py", edits=[{"oldText": f"    return {k}\n",
                                                               "newText": f"    return {k} + 1\n"}])
        per_edit = (time.perf_counter() - t0) * 1000 / edits
        checkpoints = [e for e in await session.storage.find_entries("custom") if isinstance(e, CustomEntry)]
        blob_bytes = sum(len(json.dumps(e.data)) for e in checkpoints if not _first_path(e.data).endswith("big.txt"))
        emit(bench="edits_session", files=files, edits=edits, ms_per_edit=round(per_edit, 2),
             checkpoint_bytes=blob_bytes, file_bytes=(work / "f0.py").stat().st_size)
        sid = session.session_id
        await catalog.close()

        catalog = await open_catalog("sqlite", base / "home")
        storage = await catalog.open(sid)
        loads = []
        for _ in range(3):
            t0 = time.perf_counter()
            history = await FileHistory.load(storage)
            loads.append((time.perf_counter() - t0) * 1000)
        emit(bench="history_load", checkpoints=len(history.checkpoints), median_ms=round(statistics.median(loads), 1))
        journal = Journal(base / "home", sid)
        ids = await path_ids_of(storage, first)
        t0 = time.perf_counter()
        here = Boundary.of(work)
        plan = plan_restore(sid, first, ids, history, journal, here)
        emit(bench="restore_plan", files=len(plan.steps), ms=round((time.perf_counter() - t0) * 1000, 1))
        t0 = time.perf_counter()
        done = apply_restore(plan, history, journal, here)
        emit(bench="restore_apply", changed=done.changed, ms=round((time.perf_counter() - t0) * 1000, 1))
        await catalog.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
