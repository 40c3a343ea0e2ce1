"""What issue 12 adds before every request, timed: compaction planning on the imported 914-message
Pi session (the usual tail, and fitted to an 8k window), the summary request's fitted text, the
system prompt with context files, and `@file` expansion. One JSON object per line.

    .venv/bin/python bench/agentctx.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi" / "large-session.v3.jsonl"


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    runs, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs), result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    repeat = parser.parse_args().repeat

    from treechat.session.compaction import CompactionSettings, prepare_compaction
    from treechat.session.session import Session
    from treechat.storage.memory import MemoryCatalog
    from treechat.storage.session_file import read_session_file

    header, entries, leaf, _ = read_session_file(FIXTURE)
    storage, _ = await MemoryCatalog().import_session({**header, "id": "bench"}, entries, leaf)
    session = await Session.open(storage)
    path = await session.get_branch()
    messages = (await session.build_session_context()).messages
    settings = CompactionSettings()

    ms, plan = timed(lambda: prepare_compaction(path, messages, settings), repeat)
    print(json.dumps({"bench": "plan_914", "ms": round(ms, 2), "summarised": len(plan.messages_to_summarize)}))
    try:
        from treechat.session.compaction import compaction_budget
        from treechat.session.summarize import serialize_within
    except ImportError:  # the code before issue 12: nothing more to compare
        return
    budget = compaction_budget(8192, settings, overhead=600)
    ms, plan = timed(lambda: prepare_compaction(path, messages, settings, tail_budget=budget.keep_tail), repeat)
    print(json.dumps({"bench": "plan_914_8k", "ms": round(ms, 2), "summarised": len(plan.messages_to_summarize),
                      "keep_tail": budget.keep_tail}))
    chars = budget.summary_input * 4
    ms, text = timed(lambda: serialize_within(plan.messages_to_summarize, chars), repeat)
    print(json.dumps({"bench": "summary_text_8k", "ms": round(ms, 2), "chars": len(text)}))

    from treechat.agent.tools import make_tools
    from treechat.prompts.attachments import expand_prompt
    from treechat.session.system_prompt import SystemPromptBuilder

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        deep = root / "a" / "b" / "c"
        deep.mkdir(parents=True)
        for folder in (root, root / "a", deep):
            (folder / "AGENTS.md").write_text("Follow the rules.\n" * 200)
        tools = make_tools(["read", "ls", "grep", "bash"])
        ms, prompt = timed(lambda: SystemPromptBuilder(cwd=str(deep)).build(tools), repeat)
        print(json.dumps({"bench": "system_prompt_first_build", "ms": round(ms, 3), "chars": len(prompt)}))
        builder = SystemPromptBuilder(cwd=str(deep))
        builder.build(tools)
        ms, _ = timed(lambda: builder.build(tools), repeat)
        print(json.dumps({"bench": "system_prompt_rebuild", "ms": round(ms, 3)}))
        (deep / "big.py").write_text("x = 1  # a line of code\n" * 4000)
        ms, prepared = timed(lambda: expand_prompt("explain @big.py please", deep), repeat)
        print(json.dumps({"bench": "expand_at_file_96kb", "ms": round(ms, 3), "chars": len(prepared.text)}))


if __name__ == "__main__":
    asyncio.run(main())
