"""What the RPC client reads: the answers of get_state, get_messages, get_session_stats,
get_available_models, get_fork_messages, get_last_assistant_text, get_commands (Pi's shapes,
docs/rpc.md) and get_tree (treechat's). Read from the controller; nothing here changes anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from treechat.agent.queues import QueueMode
from treechat.agent.types import AgentMessage, Json, JsonObject
from treechat.chat import Chat
from treechat.llm.types import THINKING_LEVELS, ModelInfo
from treechat.session.agent_session import clamp_thinking
from treechat.session.compaction import calculate_context_tokens, estimate_tokens
from treechat.storage.model import AssistantMessage, MessageEntry, ToolCall, message_text

from ..pi_events import message_json, model_json


@dataclass
class Preferences:
    """What the client set that lives in the agent (made anew after a session switch): applied
    to every AgentSession the chat makes. None: the agent's own default."""

    steering_mode: QueueMode | None = None
    follow_up_mode: QueueMode | None = None
    auto_compaction: bool | None = None
    auto_retry: bool | None = None


async def messages(chat: Chat) -> list[AgentMessage]:
    """The conversation as the agent holds it (the context of the leaf before there is one)."""
    if chat.agent is not None:
        return list(chat.agent.state.messages)
    return list((await chat.session.build_session_context()).messages)


async def session_file(chat: Chat) -> str | None:
    """The session's own file (the JSONL store), or None (a database keeps it with the others)."""
    path = (await chat.session.storage.get_metadata()).path
    return path if path and path.endswith(".jsonl") else None


def thinking_level(chat: Chat) -> str:
    if chat.agent is not None:
        return chat.agent.state.thinking_level
    return chat.status().thinking or "off"


def thinking_levels(model: ModelInfo) -> list[str]:
    """The levels `model` has (Pi's cycle goes through these)."""
    return list(dict.fromkeys(clamp_thinking(model, level) for level in THINKING_LEVELS))


async def state(chat: Chat, prefs: Preferences) -> JsonObject:
    model = chat.current_model()
    agent = chat.agent
    queue = chat.queue
    out: JsonObject = {
        "model": model_json(model) if model is not None else None,
        "thinkingLevel": thinking_level(chat),
        "isStreaming": chat.is_running,
        "isCompacting": bool(agent is not None and agent.is_compacting),
        "steeringMode": agent.agent.steering_mode if agent is not None else prefs.steering_mode or "one-at-a-time",
        "followUpMode": agent.agent.follow_up_mode if agent is not None else prefs.follow_up_mode or "one-at-a-time",
        "sessionId": chat.session_id,
        "autoCompactionEnabled": (agent.compactor.settings.enabled if agent is not None
                                  else prefs.auto_compaction if prefs.auto_compaction is not None
                                  else chat.settings.compaction.enabled),
        "messageCount": len(await messages(chat)),
        "pendingMessageCount": len(queue.steering) + len(queue.follow_up),
    }
    path = await session_file(chat)
    if path:
        out["sessionFile"] = path
    name = await chat.session.get_session_name()
    if name:
        out["sessionName"] = name
    return out


async def session_stats(chat: Chat) -> JsonObject:
    """Pi's SessionStats: counts and token totals of the conversation, and the context in use."""
    held = await messages(chat)
    replies = [m for m in held if isinstance(m, AssistantMessage)]
    tokens = {"input": sum(m.usage.input for m in replies), "output": sum(m.usage.output for m in replies),
              "cacheRead": sum(m.usage.cache_read for m in replies),
              "cacheWrite": sum(m.usage.cache_write for m in replies)}
    out: JsonObject = {
        "sessionId": chat.session_id,
        "userMessages": sum(1 for m in held if m.role == "user"),
        "assistantMessages": len(replies),
        "toolCalls": sum(1 for m in replies for b in m.content if isinstance(b, ToolCall)),
        "toolResults": sum(1 for m in held if m.role == "toolResult"),
        "totalMessages": len(held),
        "tokens": {**tokens, "total": sum(tokens.values())},
        "cost": sum(m.usage.cost.total for m in replies),
    }
    path = await session_file(chat)
    if path:
        out["sessionFile"] = path
    usage = context_usage(chat, held)
    if usage is not None:
        out["contextUsage"] = usage
    return out


def context_usage(chat: Chat, held: Sequence[AgentMessage]) -> JsonObject | None:
    model = chat.current_model()
    if model is None or model.context_window <= 0:
        return None
    last = next((m for m in reversed(held) if isinstance(m, AssistantMessage)
                 and m.stop_reason not in ("error", "aborted")), None)
    if last is not None and calculate_context_tokens(last.usage) > 0:
        after = held[held.index(last) + 1:]
        tokens = calculate_context_tokens(last.usage) + sum(estimate_tokens(m) for m in after)
    else:
        tokens = sum(estimate_tokens(m) for m in held)
    window = model.context_window
    return {"tokens": tokens, "contextWindow": window, "percent": tokens / window * 100}


async def available_models(chat: Chat) -> list[ModelInfo]:
    """The models a request can go to now: every provider with its key (or none needed), and
    the local servers answering now (asked as the app's model picker asks: within a second, never
    the one a reply is coming from)."""
    chat.add_local_servers(await chat.local.found(chat.busy_server()))
    registry = chat.registry
    return [chat.local.known(m) for m in registry.models() if registry.key_problem(m) is None]


async def fork_messages(chat: Chat) -> list[JsonObject]:
    """Every prompt of the session, on any branch (Pi's list: what `fork` takes), oldest first."""
    await chat.whole_tree()
    tree = chat.tree
    ids = [tree.id_at(slot) for slot in _rows(chat) if tree.kind_at(slot)[1] == "user"]
    out: list[JsonObject] = []
    for entry in await chat.entries(ids):
        if isinstance(entry, MessageEntry) and (text := message_text(entry.message)):
            out.append({"entryId": entry.id, "text": text})
    return out


def last_assistant_text(held: Sequence[AgentMessage]) -> str | None:
    """The text of the last reply (one stopped before it said anything does not count); None when none."""
    for message in reversed(held):
        if isinstance(message, AssistantMessage) and not (message.stop_reason == "aborted" and not message.content):
            text = message_text(message).strip()
            return text or None
    return None


def commands(chat: Chat) -> list[JsonObject]:
    """Prompt templates and skills, invoked with `prompt` as `/name` and `/skill:name` (Pi's list,
    with Pi's `sourceInfo`: the file, and whether it is the project's or the user's)."""
    found = chat.extensions
    out: list[JsonObject] = []
    for template in found.templates:
        out.append({"name": template.name, "description": template.description, "source": "prompt",
                    "sourceInfo": _source(chat, template.path)})
    for skill in found.skills:
        out.append({"name": f"skill:{skill.name}", "description": skill.description, "source": "skill",
                    "sourceInfo": {**_source(chat, skill.path), "baseDir": str(skill.base_dir)}})
    return out


def _source(chat: Chat, path: Path) -> JsonObject:
    inside = path.resolve().is_relative_to(Path(chat.folder).resolve())
    return {"path": str(path), "source": "local", "scope": "project" if inside else "user", "origin": "top-level"}


async def tree(chat: Chat) -> JsonObject:
    """get_tree: every entry of the session (any branch) with its parent, type, role, first
    line, label and time, and the leaf. `status` marks a reply that failed or was stopped."""
    await chat.whole_tree()
    index = chat.tree
    entries: list[Json] = []
    for slot in _rows(chat):
        row = index.row_at(slot)
        item: JsonObject = {"id": row.id, "parentId": row.parent_id, "type": row.type, "preview": row.preview,
                            "label": row.label, "timestamp": row.timestamp}
        if row.role:
            item["role"] = row.role
        if row.status:
            item["status"] = row.status
        entries.append(item)
    return {"leafId": chat.leaf_id, "entries": entries}


def _rows(chat: Chat) -> list[int]:
    """The tree's slots that are entries (leaf markers are none), in append order."""
    dead = set(chat.tree.dead_slots)
    return [slot for slot in range(chat.tree.size) if slot not in dead]


def messages_json(held: Sequence[AgentMessage]) -> list[Json]:
    return [message_json(m) for m in held]
