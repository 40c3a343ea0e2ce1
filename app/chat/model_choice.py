"""The controller's choice of model: which one the next message goes to, whether it can go out,
and what local servers say about the models they run.

`ModelChoice` is the controller's role for this: it reads the shared state (`ChatState`: the
registry, the path's model, the agent) and tells front ends on its bus.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from treechat.chat.errors import ChatError
from treechat.chat.events import Notice, Readiness, StatusChanged
from treechat.llm.detect import DetectedServer, root_of
from treechat.llm.local import shown_url
from treechat.llm.types import ModelInfo, stored_model_ref
from treechat.local_models import LocalModels, key_of

if TYPE_CHECKING:
    from treechat.chat.state import ChatState
    from treechat.llm.detect import ServerModelInfo
    from treechat.session.agent_session import AgentSession


class ModelChoice:
    """Which model the next message goes to, whether it can go out, and the local servers."""

    def __init__(self, s: ChatState, *, local_servers: Sequence[tuple[str, str]] | None = None) -> None:
        self.s = s
        # local servers and what they say about their models (None: the usual ports and config.toml's)
        self.local = LocalModels(s.registry, s.settings, servers=local_servers, on_refined=self._server_answered)

    @property
    def detected(self) -> list[DetectedServer]:
        return self.local.detected

    def resolve_model(self) -> ModelInfo:
        ref = self.s.model_ref or self.path_model_ref()
        if not ref and self.detected and self.detected[0].models:
            ref = f"{self.detected[0].provider}/{self.detected[0].models[0]}"
        if not ref and self.local.unanswered:
            silent = self.local.unanswered[0]
            raise ChatError(f"No model chosen, and the server at {shown_url(silent.server.base_url)} "
                            f"({silent.server.source}) did not list its models: {silent.reason}. Pass --model "
                            f"{silent.server.provider}/MODEL-ID, or press Ctrl+L once it answers.")
        if not ref:
            keyed = self.s.registry.providers_with_keys()
            found = (f" Keys were found for {', '.join(keyed)}." if keyed else
                     " No API key was found (set e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY, or add a provider to "
                     "config.toml) and no local server (Ollama, llama.cpp, LM Studio, vLLM) was found.")
            raise ChatError('No model chosen: press Ctrl+L to pick one, pass --model PROVIDER/ID, '
                            f'or set model = "PROVIDER/ID" in config.toml.{found}')
        try:
            return self.s.registry.resolve(ref)
        except ValueError as err:
            raise ChatError(str(err)) from None

    def path_model_ref(self) -> str | None:
        return stored_model_ref(self.s.path_state.model)

    def current_model(self) -> ModelInfo | None:
        """The model the next message goes to (None: none chosen, or it cannot be resolved)."""
        if self.s.agent is not None:
            return self.s.agent.state.model
        try:
            return self.local.known(self.resolve_model())
        except ChatError:
            return None

    def readiness(self) -> Readiness:
        servers = tuple(s.provider for s in self.detected)
        read_only = self.s.read_only
        if read_only:
            return Readiness(f"Read-only ({read_only}): browsing and search work, sending does not.", servers)
        try:
            model = self.s.agent.state.model if self.s.agent is not None else self.resolve_model()
        except ChatError as err:
            return Readiness(str(err), servers)
        return Readiness(self.s.registry.key_problem(model), servers)

    def add_local_servers(self, found: Sequence[DetectedServer]) -> None:
        """Local servers found (at start-up, when the picker opens, or for `-p`): offered as
        models, used when nothing else is chosen."""
        self.local.add(found)
        self.s.emit(StatusChanged())
        self.s.emit(self.readiness())
        self.local.probe(self.current_model())

    def _server_answered(self, key: tuple[str, str], info: ServerModelInfo) -> None:
        """A local server said what it runs a model with: the model in use is refined from now on."""
        for run in self.s.every_run():
            if key_of(run.agent.state.model) == key:
                run.agent.state.model = self.local.known(run.agent.state.model)
        if info.note:
            self.s.emit(Notice(info.note, "warning"))
        self.s.emit(StatusChanged())

    def busy_server(self) -> str | None:
        streaming = next((r.agent for r in self.s.runs.values() if r.agent.is_streaming), None)
        return root_of(streaming.state.model.base_url) if streaming is not None else None

    def window_learned(self, window: int, agent: AgentSession | None = None) -> None:
        """An overflow error stated the window of the model `agent` uses (the compactor found it; None:
        the agent on screen): it is that model's window from now on, and remembered where the server
        says it nowhere else."""
        agent = agent or self.s.agent
        if agent is not None:
            agent.state.model = self.local.learned(agent.state.model, window)
            self.s.emit(StatusChanged())
