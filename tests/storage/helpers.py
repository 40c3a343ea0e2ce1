"""Entry builders for the storage tests: short, explicit ids so failures read well."""

from __future__ import annotations

from treechat.storage.model import (
    ActiveToolsChangeEntry,
    AssistantMessage,
    CompactionEntry,
    Cost,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    TextContent,
    ThinkingLevelChangeEntry,
    ToolResultMessage,
    Usage,
    UserMessage,
)

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def iso(ms: int) -> str:
    from treechat.storage.model_lite import ms_to_iso

    return ms_to_iso(ms)


def user(id: str, parent: str | None, text: str = "hello", ms: int = T0) -> MessageEntry:
    return MessageEntry(id=id, parent_id=parent, timestamp=iso(ms), message=UserMessage(content=text, timestamp=ms))


def assistant(
    id: str,
    parent: str | None,
    text: str = "answer",
    *,
    provider: str = "prov",
    model: str = "model-a",
    inp: int = 0,
    out: int = 0,
    cost: float = 0.0,
    ms: int = T0,
) -> MessageEntry:
    usage = Usage(input=inp, output=out, total_tokens=inp + out, cost=Cost(total=cost))
    msg = AssistantMessage(
        content=[TextContent(text=text)], provider=provider, model=model, usage=usage, timestamp=ms
    )
    return MessageEntry(id=id, parent_id=parent, timestamp=iso(ms), message=msg)


def tool_result(id: str, parent: str | None, text: str = "ok") -> MessageEntry:
    msg = ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text=text)])
    return MessageEntry(id=id, parent_id=parent, message=msg)


def model_change(id: str, parent: str | None, provider: str = "other", model: str = "model-b"):
    return ModelChangeEntry(id=id, parent_id=parent, provider=provider, model_id=model)


def thinking(id: str, parent: str | None, level: str = "high"):
    return ThinkingLevelChangeEntry(id=id, parent_id=parent, thinking_level=level)


def tools(id: str, parent: str | None, names: list[str]):
    return ActiveToolsChangeEntry(id=id, parent_id=parent, active_tool_names=names)


def compaction(id: str, parent: str | None, first_kept: str | None = None, retained_tail: bool | None = None):
    return CompactionEntry(
        id=id,
        parent_id=parent,
        summary="summary of earlier work",
        first_kept_entry_id=first_kept,
        tokens_before=1000,
        retained_tail=retained_tail,
    )


def label(id: str, parent: str | None, target: str, text: str | None):
    return LabelEntry(id=id, parent_id=parent, target_id=target, label=text)


def info(id: str, parent: str | None, name: str | None):
    return SessionInfoEntry(id=id, parent_id=parent, name=name)


async def append_all(storage, *entries) -> None:
    for entry in entries:
        await storage.append_entry(entry)


def ids(entries) -> list[str]:
    return [e.id for e in entries]
