"""The RPC commands as typed values: Pi 0.73.1's (`RpcCommand` of its rpc-types.d.ts, docs/rpc.md)
and treechat's own (the tree: `get_tree`, `move_to`, `label`), each a frozen dataclass, and the
client's answer to an approval (`extension_ui_response`).

`parse(obj)` checks one decoded JSON line and returns its command, or raises `CommandError`
naming the command and the field at fault: a missing or mistyped field is refused before
anything runs. Unknown extra fields are ignored (a newer client may send more).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from treechat.agent.queues import QueueMode
from treechat.agent.types import Json
from treechat.prompts.attachments import MAX_IMAGE_BYTES
from treechat.storage.model import ImageContent
from treechat.text.images import image_mime

RequestId: TypeAlias = str | int | None
Behaviour = Literal["steer", "follow_up"]
THINKING = ("off", "minimal", "low", "medium", "high", "xhigh")
MAX_IMAGES = 20


class CommandError(ValueError):
    """A line that is no valid command: the error response says `command` (the type, or "parse")
    and this message; `id` is the request's, when it had a usable one."""

    def __init__(self, message: str, command: str = "parse", request_id: RequestId = None) -> None:
        super().__init__(message)
        self.command, self.request_id = command, request_id


# ---------------------------------------------------------------- prompting


@dataclass(frozen=True)
class Prompt:
    message: str
    images: tuple[ImageContent, ...] = ()
    streaming_behavior: Behaviour | None = None  # while a run goes on: queue as a steer or a follow-up
    id: RequestId = None
    type: Literal["prompt"] = "prompt"


@dataclass(frozen=True)
class Steer:
    message: str
    images: tuple[ImageContent, ...] = ()
    id: RequestId = None
    type: Literal["steer"] = "steer"


@dataclass(frozen=True)
class FollowUp:
    message: str
    images: tuple[ImageContent, ...] = ()
    id: RequestId = None
    type: Literal["follow_up"] = "follow_up"


@dataclass(frozen=True)
class Abort:
    id: RequestId = None
    type: Literal["abort"] = "abort"


@dataclass(frozen=True)
class NewSession:
    parent_session: str | None = None
    id: RequestId = None
    type: Literal["new_session"] = "new_session"


# ---------------------------------------------------------------- state, model, thinking, queues


@dataclass(frozen=True)
class GetState:
    id: RequestId = None
    type: Literal["get_state"] = "get_state"


@dataclass(frozen=True)
class GetMessages:
    id: RequestId = None
    type: Literal["get_messages"] = "get_messages"


@dataclass(frozen=True)
class SetModel:
    provider: str
    model_id: str
    id: RequestId = None
    type: Literal["set_model"] = "set_model"


@dataclass(frozen=True)
class CycleModel:
    id: RequestId = None
    type: Literal["cycle_model"] = "cycle_model"


@dataclass(frozen=True)
class GetAvailableModels:
    id: RequestId = None
    type: Literal["get_available_models"] = "get_available_models"


@dataclass(frozen=True)
class SetThinkingLevel:
    level: str
    id: RequestId = None
    type: Literal["set_thinking_level"] = "set_thinking_level"


@dataclass(frozen=True)
class CycleThinkingLevel:
    id: RequestId = None
    type: Literal["cycle_thinking_level"] = "cycle_thinking_level"


@dataclass(frozen=True)
class SetSteeringMode:
    mode: QueueMode
    id: RequestId = None
    type: Literal["set_steering_mode"] = "set_steering_mode"


@dataclass(frozen=True)
class SetFollowUpMode:
    mode: QueueMode
    id: RequestId = None
    type: Literal["set_follow_up_mode"] = "set_follow_up_mode"


@dataclass(frozen=True)
class Compact:
    custom_instructions: str | None = None
    id: RequestId = None
    type: Literal["compact"] = "compact"


@dataclass(frozen=True)
class SetAutoCompaction:
    enabled: bool
    id: RequestId = None
    type: Literal["set_auto_compaction"] = "set_auto_compaction"


@dataclass(frozen=True)
class SetAutoRetry:
    enabled: bool
    id: RequestId = None
    type: Literal["set_auto_retry"] = "set_auto_retry"


@dataclass(frozen=True)
class AbortRetry:
    id: RequestId = None
    type: Literal["abort_retry"] = "abort_retry"


# ---------------------------------------------------------------- bash


@dataclass(frozen=True)
class Bash:
    command: str
    id: RequestId = None
    type: Literal["bash"] = "bash"


@dataclass(frozen=True)
class AbortBash:
    id: RequestId = None
    type: Literal["abort_bash"] = "abort_bash"


# ---------------------------------------------------------------- sessions


@dataclass(frozen=True)
class GetSessionStats:
    id: RequestId = None
    type: Literal["get_session_stats"] = "get_session_stats"


@dataclass(frozen=True)
class ExportHtml:
    output_path: str | None = None
    id: RequestId = None
    type: Literal["export_html"] = "export_html"


@dataclass(frozen=True)
class SwitchSession:
    session_path: str  # a session id (or prefix), or a Pi session file of this store
    id: RequestId = None
    type: Literal["switch_session"] = "switch_session"


@dataclass(frozen=True)
class Fork:
    entry_id: str
    id: RequestId = None
    type: Literal["fork"] = "fork"


@dataclass(frozen=True)
class Clone:
    id: RequestId = None
    type: Literal["clone"] = "clone"


@dataclass(frozen=True)
class GetForkMessages:
    id: RequestId = None
    type: Literal["get_fork_messages"] = "get_fork_messages"


@dataclass(frozen=True)
class GetLastAssistantText:
    id: RequestId = None
    type: Literal["get_last_assistant_text"] = "get_last_assistant_text"


@dataclass(frozen=True)
class SetSessionName:
    name: str
    id: RequestId = None
    type: Literal["set_session_name"] = "set_session_name"


@dataclass(frozen=True)
class GetCommands:
    id: RequestId = None
    type: Literal["get_commands"] = "get_commands"


# ---------------------------------------------------------------- the tree (treechat's own)


@dataclass(frozen=True)
class GetTree:
    id: RequestId = None
    type: Literal["get_tree"] = "get_tree"


@dataclass(frozen=True)
class MoveTo:
    entry_id: str | None  # None: before the first entry
    summarize: bool = False  # the model summarises the branch left behind
    custom_instructions: str | None = None  # for that summary
    summary: str | None = None  # or this text is the summary
    id: RequestId = None
    type: Literal["move_to"] = "move_to"


@dataclass(frozen=True)
class Label:
    entry_id: str
    label: str | None  # None or "": the label is cleared
    id: RequestId = None
    type: Literal["label"] = "label"


# ---------------------------------------------------------------- the client's answer to a request


@dataclass(frozen=True)
class UiResponse:
    """`extension_ui_response`: the answer to one of our `extension_ui_request`s (an approval)."""

    request: str
    confirmed: bool | None = None
    value: str | None = None
    cancelled: bool = False
    type: Literal["extension_ui_response"] = "extension_ui_response"


Command: TypeAlias = (
    Prompt | Steer | FollowUp | Abort | NewSession | GetState | GetMessages | SetModel | CycleModel
    | GetAvailableModels | SetThinkingLevel | CycleThinkingLevel | SetSteeringMode | SetFollowUpMode | Compact
    | SetAutoCompaction | SetAutoRetry | AbortRetry | Bash | AbortBash | GetSessionStats | ExportHtml | SwitchSession
    | Fork | Clone | GetForkMessages | GetLastAssistantText | SetSessionName | GetCommands | GetTree | MoveTo | Label
)


# ---------------------------------------------------------------- parsing


class _Fields:
    """One command's JSON object, read field by field; a wrong one is a CommandError naming it."""

    def __init__(self, obj: dict[str, Json], command: str, request_id: RequestId) -> None:
        self.obj, self.command, self.id = obj, command, request_id

    def fail(self, text: str) -> CommandError:
        return CommandError(f"{self.command}: {text}", self.command, self.id)

    def text(self, key: str) -> str:
        value = self.obj.get(key)
        if not isinstance(value, str):
            raise self.fail(f'"{key}" must be a string' if key in self.obj else f'missing "{key}" (a string)')
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.obj.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f'"{key}" must be a string when given')
        return value

    def entry(self, key: str) -> str | None:
        """An entry id, or null (before the first entry): the key must be there."""
        if key not in self.obj:
            raise self.fail(f'missing "{key}" (an entry id, or null)')
        return self.optional_text(key)

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self.obj.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f'"{key}" must be true or false' if key in self.obj else f'missing "{key}" (true or false)')
        return value

    def mode(self) -> QueueMode:
        value = self.text("mode")
        if value not in ("all", "one-at-a-time"):
            raise self.fail(f'"mode" must be "all" or "one-at-a-time", not {value!r}')
        return cast(QueueMode, value)

    def level(self) -> str:
        value = self.text("level")
        if value not in THINKING:
            raise self.fail(f'"level" must be one of {", ".join(THINKING)}, not {value!r}')
        return value

    def behaviour(self) -> Behaviour | None:
        value = self.optional_text("streamingBehavior")
        if value is None:
            return None
        if value in ("followUp", "follow_up"):
            return "follow_up"
        if value == "steer":
            return "steer"
        raise self.fail(f'"streamingBehavior" must be "steer" or "followUp", not {value!r}')

    def images(self) -> tuple[ImageContent, ...]:
        raw = self.obj.get("images")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail('"images" must be a list of {"type": "image", "data", "mimeType"}')
        if len(raw) > MAX_IMAGES:
            raise self.fail(f"at most {MAX_IMAGES} images go with one message")
        return tuple(self._image(i, item) for i, item in enumerate(raw))

    def _image(self, index: int, item: Json) -> ImageContent:
        if not isinstance(item, dict) or not isinstance(item.get("data"), str):
            raise self.fail(f'images[{index}] must be {{"type": "image", "data": BASE64, "mimeType": …}}')
        data = cast(str, item["data"])
        if len(data) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
            raise self.fail(f"images[{index}] is over {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
        try:
            head = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail(f"images[{index}]: its data is not base64") from None
        mime = image_mime(head[:12])
        if mime is None:
            raise self.fail(f"images[{index}] is not a PNG, JPEG, GIF or WebP image")
        return ImageContent(data=data, mime_type=mime)


_PARSERS: dict[str, Callable[[_Fields], Command]] = {
    "prompt": lambda f: Prompt(f.text("message"), f.images(), f.behaviour(), id=f.id),
    "steer": lambda f: Steer(f.text("message"), f.images(), id=f.id),
    "follow_up": lambda f: FollowUp(f.text("message"), f.images(), id=f.id),
    "abort": lambda f: Abort(id=f.id),
    "new_session": lambda f: NewSession(f.optional_text("parentSession"), id=f.id),
    "get_state": lambda f: GetState(id=f.id),
    "get_messages": lambda f: GetMessages(id=f.id),
    "set_model": lambda f: SetModel(f.text("provider"), f.text("modelId"), id=f.id),
    "cycle_model": lambda f: CycleModel(id=f.id),
    "get_available_models": lambda f: GetAvailableModels(id=f.id),
    "set_thinking_level": lambda f: SetThinkingLevel(f.level(), id=f.id),
    "cycle_thinking_level": lambda f: CycleThinkingLevel(id=f.id),
    "set_steering_mode": lambda f: SetSteeringMode(f.mode(), id=f.id),
    "set_follow_up_mode": lambda f: SetFollowUpMode(f.mode(), id=f.id),
    "compact": lambda f: Compact(f.optional_text("customInstructions"), id=f.id),
    "set_auto_compaction": lambda f: SetAutoCompaction(f.flag("enabled"), id=f.id),
    "set_auto_retry": lambda f: SetAutoRetry(f.flag("enabled"), id=f.id),
    "abort_retry": lambda f: AbortRetry(id=f.id),
    "bash": lambda f: Bash(f.text("command"), id=f.id),
    "abort_bash": lambda f: AbortBash(id=f.id),
    "get_session_stats": lambda f: GetSessionStats(id=f.id),
    "export_html": lambda f: ExportHtml(f.optional_text("outputPath"), id=f.id),
    "switch_session": lambda f: SwitchSession(f.text("sessionPath"), id=f.id),
    "fork": lambda f: Fork(f.text("entryId"), id=f.id),
    "clone": lambda f: Clone(id=f.id),
    "get_fork_messages": lambda f: GetForkMessages(id=f.id),
    "get_last_assistant_text": lambda f: GetLastAssistantText(id=f.id),
    "set_session_name": lambda f: SetSessionName(f.text("name"), id=f.id),
    "get_commands": lambda f: GetCommands(id=f.id),
    "get_tree": lambda f: GetTree(id=f.id),
    "move_to": lambda f: MoveTo(f.entry("entryId"), f.flag("summarize", False), f.optional_text("customInstructions"),
                                f.optional_text("summary"), id=f.id),
    "label": lambda f: Label(f.text("entryId"), f.optional_text("label"), id=f.id),
}
COMMAND_TYPES = frozenset(_PARSERS)


def request_id(obj: dict[str, Json]) -> RequestId:
    """The request's `id`: a string or a number (echoed as given); anything else is not one."""
    value = obj.get("id")
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def parse(obj: Json) -> Command | UiResponse:
    """One decoded line as a command (or an approval's answer); CommandError when it is none."""
    if not isinstance(obj, dict):
        raise CommandError('Failed to parse command: a command is a JSON object with a "type"')
    rid = request_id(obj)
    kind = obj.get("type")
    if kind == "extension_ui_response":
        return _ui_response(obj)
    if not isinstance(kind, str):
        raise CommandError('Failed to parse command: missing "type" (the command\'s name)', request_id=rid)
    parser = _PARSERS.get(kind)
    if parser is None:
        raise CommandError(f"Unknown command: {kind}", kind, rid)
    return parser(_Fields(obj, kind, rid))


def _ui_response(obj: dict[str, Json]) -> UiResponse:
    rid = obj.get("id")
    if not isinstance(rid, str):
        raise CommandError('extension_ui_response: missing "id" (the request answered)', "extension_ui_response")
    confirmed, value, cancelled = obj.get("confirmed"), obj.get("value"), obj.get("cancelled")
    return UiResponse(rid, confirmed if isinstance(confirmed, bool) else None,
                      value if isinstance(value, str) else None, cancelled is True)
