"""Small builders for session tests (Pi's acceptance cases use minimal user/assistant messages)."""

from __future__ import annotations

from typing import Any

from treechat.storage.model import AssistantMessage, TextContent, Usage, UserMessage, parse_entry

TS = "2025-01-01T00:00:00Z"


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def assistant(text: str, provider: str = "anthropic", model: str = "claude-test") -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="anthropic-messages",
        provider=provider,
        model=model,
        usage=Usage(input=1, output=1, total_tokens=2),
        stop_reason="stop",
        timestamp=1,
    )


def msg_entry(id: str, parent: str | None, message: Any) -> Any:
    return parse_entry({"type": "message", "id": id, "parentId": parent, "timestamp": TS,
                        "message": message.model_dump(mode="json", by_alias=True)})


def entry(type: str, id: str, parent: str | None, **fields: Any) -> Any:
    return parse_entry({"type": type, "id": id, "parentId": parent, "timestamp": TS, **fields})


def texts(ctx: Any) -> list[str]:
    """The text of each context message (summaries by their summary)."""
    out = []
    for m in ctx.messages:
        if hasattr(m, "summary"):
            out.append(m.summary)
        elif isinstance(m.content, str):
            out.append(m.content)
        else:
            out.append("".join(getattr(b, "text", "") for b in m.content))
    return out
