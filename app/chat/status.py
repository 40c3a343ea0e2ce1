"""The status bar's and the header's data, computed from the controller's state (pure functions).

Everything here is read from memory: the path state kept as entries arrive, the agent's context
use and queue, the tree index. Nothing reads storage, so a status after every appended entry
costs microseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from treechat.chat.events import Mark, Status
from treechat.llm.local import shown_ref
from treechat.llm.registry import ModelRegistry
from treechat.llm.types import ModelInfo
from treechat.session.agent_session import AgentSession
from treechat.storage.base import PathState
from treechat.storage.model import Usage
from treechat.storage.tree.index import TreeIndex
from treechat.text.expanded import skill_line


def build_status(state: PathState, agent: AgentSession | None, model: ModelInfo | None,
                 registry: ModelRegistry, tools: Sequence[str] = (), *, runs: int = 0) -> Status:
    percent, estimated = None, False
    if model is not None and not model.window_known:
        pass  # its server has not said how large the window is: "ctx ?"
    elif agent is not None:
        usage = agent.context_usage()
        percent, estimated = usage.percent, usage.estimated
    elif model is not None and model.context_window and (state.context_tokens > 0 or state.message_count == 0):
        percent = 100.0 * state.context_tokens / model.context_window
    # (else the path has replies but its server counted no tokens, as llama-cpp-python's streams
    # do: until an agent estimates them from the messages, "ctx ?" rather than a false 0%)
    queue = agent.queue_update() if agent is not None else None
    counted = state.input_tokens + state.cache_read_tokens + state.cache_write_tokens + state.output_tokens
    replied = state.message_count >= 2  # a prompt and something after it
    return Status(model=shown_ref(model.provider, model.id) if model else "no model",
                  thinking=agent.state.thinking_level if agent is not None else state.thinking_level,
                  tokens_in=state.input_tokens + state.cache_read_tokens, tokens_out=state.output_tokens,
                  tokens_reported=counted > 0 or not replied,
                  cost=state.cost_total, context_percent=percent, context_estimated=estimated,
                  model_warning=model is not None and bool(registry.key_problem(model)),
                  queued_steer=len(queue.steering) if queue else 0,
                  queued_follow_up=len(queue.follow_up) if queue else 0, tools=tuple(tools), runs=runs)


def with_children(state: PathState, spent: Iterable[Usage]) -> PathState:
    """The path's state with what the sub-agents running now spent so far added (a call's result,
    once on the path, counts its child there: chat/subagents.py)."""
    spent = list(spent)
    if not spent:
        return state
    return replace(state, input_tokens=state.input_tokens + sum(u.input for u in spent),
                   output_tokens=state.output_tokens + sum(u.output for u in spent),
                   cache_read_tokens=state.cache_read_tokens + sum(u.cache_read for u in spent),
                   cache_write_tokens=state.cache_write_tokens + sum(u.cache_write for u in spent),
                   cost_total=state.cost_total + sum(u.cost.total for u in spent))


def first_prompt(tree: TreeIndex, leaf_id: str | None) -> str | None:
    """The first user prompt on the path root → leaf, as one line (what an unnamed session is
    called); never a tool result's or a summary's text."""
    for slot in tree.path_slots(tree.slot(leaf_id)):
        if tree.kind_at(slot)[:2] == ("message", "user"):
            line = " ".join(tree.previews.get(slot).split())
            return skill_line(line) or line  # (a skill's block is no title)
    return None


def opening_prompt(tree: TreeIndex) -> str | None:
    """The session's first prompt anywhere in its tree, as one line: what an unnamed session is
    called while its leaf is before every prompt (a rewind to the root)."""
    dead = set(tree.dead_slots)
    for slot in range(tree.size):
        if slot not in dead and tree.kind_at(slot)[:2] == ("message", "user"):
            return " ".join(tree.previews.get(slot).split())
    return None


def clip_words(text: str, limit: int) -> str:
    """`text` as one line of at most `limit` characters, cut after a whole word with "…" (a word
    longer than the whole limit is cut inside)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"


def entry_words(tree: TreeIndex, entry_id: str, limit: int = 40) -> str:
    """An entry as a person recognises it in a sentence: its first words, quoted."""
    row = tree.get(entry_id)
    return f"“{clip_words(row.preview, limit)}”" if row else entry_id


def viewing_text(tree: TreeIndex, preview_id: str | None) -> str | None:
    return entry_words(tree, preview_id) if preview_id else None


def sibling_marks(entry_ids: Sequence[str], tree: TreeIndex) -> list[Mark]:
    """(entry id, position 1-based, count) for each entry that has alternatives."""
    marks = []
    for entry_id in entry_ids:
        sibs = tree.siblings(entry_id)
        if len(sibs) > 1 and entry_id in sibs:
            marks.append((entry_id, sibs.index(entry_id) + 1, len(sibs)))
    return marks
