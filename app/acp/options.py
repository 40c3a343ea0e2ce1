"""treechat's model choice as ACP session config options (`session/set_config_option`).

Two selects: `model` (category "model": every model of a provider that has its key, and of the
local servers found, grouped by provider, with the one in use even when unlisted) and `thinking`
(category "thought_level": the levels the model in use has, as the app's thinking picker offers
them). There are no session modes: treechat has none (its questions are per action, answered
through `session/request_permission`).
"""

from __future__ import annotations

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
)

from treechat.chat import Chat, ChatError
from treechat.llm.local import shown_ref
from treechat.llm.types import THINKING_LEVELS, ModelInfo
from treechat.session.agent_session import clamp_thinking

MODEL, THINKING = "model", "thinking"
MAX_MODELS = 500  # options listed at most (a catalog can hold more; any PROVIDER/ID can still be set)


def _facts(model: ModelInfo) -> str:
    facts = [f"{model.context_window:,} tokens" if model.window_known else "window unknown"]
    facts += ["thinks"] if model.reasoning else []
    facts += ["images"] if "image" in model.input else []
    return " · ".join(facts)


def _option(model: ModelInfo) -> SessionConfigSelectOption:
    return SessionConfigSelectOption(value=model.ref, name=shown_ref(model.provider, model.id),
                                     description=_facts(model))


def model_option(chat: Chat) -> SessionConfigOptionSelect:
    registry = chat.registry
    current = chat.current_model()
    by_provider: dict[str, list[SessionConfigSelectOption]] = {}
    count = 0
    for model in registry.models():
        if registry.key_problem(model) or count >= MAX_MODELS:
            continue
        by_provider.setdefault(model.provider, []).append(_option(model))
        count += 1
    listed = {o.value for options in by_provider.values() for o in options}
    groups = [SessionConfigSelectGroup(group=name, name=name, options=options) for name, options in by_provider.items()]
    if current is not None and current.ref not in listed:
        groups.insert(0, SessionConfigSelectGroup(group="current", name="In use", options=[_option(current)]))
    return SessionConfigOptionSelect(id=MODEL, name="Model", category="model", type="select",
                                     current_value=current.ref if current is not None else "",
                                     description="The model the next message goes to", options=groups)


def thinking_option(chat: Chat) -> SessionConfigOptionSelect:
    model = chat.current_model()
    levels = list(dict.fromkeys(clamp_thinking(model, level) for level in THINKING_LEVELS)) if model else ["off"]
    level = chat.agent.state.thinking_level if chat.agent is not None else chat.settings.thinking or "off"
    level = clamp_thinking(model, level) if model is not None else level
    return SessionConfigOptionSelect(id=THINKING, name="Thinking", category="thought_level", type="select",
                                     current_value=level, description="How much the model thinks before it answers",
                                     options=[SessionConfigSelectOption(value=v, name=v) for v in levels])


def config_options(chat: Chat) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    return [model_option(chat), thinking_option(chat)]


async def set_option(chat: Chat, option: str, value: str | bool) -> None:
    """Raises ChatError (one sentence) for an unknown option or value."""
    if not isinstance(value, str):
        raise ChatError(f"{option} takes one of its listed values, not {value!r}.")
    if option == MODEL:
        await chat.set_model(value)
    elif option == THINKING:
        if value not in THINKING_LEVELS:
            raise ChatError(f"No thinking level {value!r}: the levels are {', '.join(THINKING_LEVELS)}.")
        await chat.set_thinking(value)
    else:
        raise ChatError(f"No option {option!r}: treechat has {MODEL!r} and {THINKING!r}.")


__all__ = ["MODEL", "THINKING", "config_options", "set_option"]
