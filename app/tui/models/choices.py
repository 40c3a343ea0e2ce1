"""What the model and thinking pickers offer, computed from the controller's registry.

The model picker lists the models chosen lately first, then the local servers found, then each
provider (those with a key first); a provider without its key says so once, on its header, and
its models cannot be chosen. The thinking picker offers what `clamp_thinking` would keep for the
model, so it never offers a level the model would not use.
"""

from __future__ import annotations

from collections.abc import Sequence

from treechat.chat import Chat
from treechat.config.provider_keys import missing_key_hint
from treechat.llm.local import shown_ref, shown_url
from treechat.llm.registry import ModelRefError
from treechat.llm.types import THINKING_LEVELS, ModelInfo
from treechat.session.agent_session import clamp_thinking
from treechat.widgets.screens import ModelChoice, ModelGroup


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    return f"{round(n / 1000)}k" if n >= 1000 else str(n)


def describe(model: ModelInfo) -> str:
    """The few facts that pick a model: its window (`?` while its server has not said), whether it
    thinks, whether it sees images."""
    if not model.known and not model.local and model.provider not in _local_names():
        return "not in the catalog"
    facts = ["local"] if model.local or model.provider in _local_names() else []
    facts += [f"{_tokens(model.context_window)} ctx" if model.window_known else "ctx ?"]
    facts += ["thinks"] if model.reasoning else []
    facts += ["images"] if "image" in model.input else []
    return " · ".join(facts)


def _local_names() -> set[str]:
    from treechat.llm.detect import LOCAL_SERVER_KINDS

    return set(LOCAL_SERVER_KINDS)


def model_groups(chat: Chat, recent: Sequence[str]) -> list[ModelGroup]:
    registry = chat.registry
    by_provider: dict[str, list[ModelInfo]] = {}
    for model in registry.models():
        by_provider.setdefault(model.provider, []).append(model)
    # (local servers found at start-up are in the registry with the models they run:
    # Chat.add_local_servers)

    def problem(provider: str, sample: ModelInfo) -> str | None:
        return missing_key_hint(provider, chat.settings) if registry.key_problem(sample) else None

    groups: list[ModelGroup] = []
    current = chat.current_model()
    recent_rows: list[ModelChoice] = []
    refs = list(dict.fromkeys([*recent, *([current.ref] if current is not None else [])]))
    known = {m.ref for models in by_provider.values() for m in models}
    for ref in refs:
        if ref not in recent and ref in known:
            continue  # the current model is marked where it is listed; only an unlisted one goes here
        try:
            model = registry.resolve(ref)
        except ModelRefError:
            continue  # its provider is gone from config.toml
        blocked = problem(model.provider, model)
        recent_rows.append(ModelChoice(ref, "no key" if blocked else describe(model), disabled=bool(blocked),
                                       label=shown_ref(model.provider, model.id)))
    if recent_rows:
        groups.append(ModelGroup("Recent", tuple(recent_rows)))
    named = {s.provider: s for s in chat.detected if s.by_url}
    local = {s.provider for s in chat.detected}
    order = sorted(by_provider, key=lambda p: (p not in named, p not in local, bool(problem(p, by_provider[p][0])), p))
    for provider in order:
        models = by_provider[provider]
        title = (f"{provider} · {shown_url(named[provider].base_url)}" if provider in named
                 else f"{provider} (local server)" if provider in local else provider)
        groups.append(ModelGroup(title, tuple(ModelChoice(m.ref, describe(chat.local.known(m)),
                                                          label=shown_ref(m.provider, m.id)) for m in models),
                                 problem=problem(provider, models[0]), provider=provider))
    # a server named by its URL that did not answer: said first, where its models would be (why:
    # the banner and doctor); any PROVIDER/MODEL-ID typed for it still goes
    silent = [ModelGroup(f"{s.server.provider} · {shown_url(s.server.base_url)}", (), provider=s.server.provider,
                         note=f"not answering · type {s.server.provider}/ID")
              for s in chat.local.unanswered if s.server.provider not in by_provider]
    first = 1 if recent_rows else 0
    return [*groups[:first], *silent, *groups[first:]]


def thinking_levels(model: ModelInfo | None) -> tuple[tuple[str, ...], str | None]:
    """The levels `model` can use, and a note saying why others are missing (None: all are there)."""
    if model is None:
        return tuple(THINKING_LEVELS), None
    levels = tuple(dict.fromkeys(clamp_thinking(model, level) for level in THINKING_LEVELS))
    if levels == ("off",):
        return levels, f"{model.ref} does not think: only off."
    if "xhigh" not in levels:
        return levels, f"{model.ref} thinks up to high."
    return levels, None
