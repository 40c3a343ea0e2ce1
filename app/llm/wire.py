"""What the adapters (openai.py, anthropic.py, responses.py) share about the wire: a chunk's JSON,
a tool call's arguments, a tool result's text, an image as a data URL, token counts, OpenAI's
bearer header and the reasoning effort a thinking level asks for."""

from __future__ import annotations

from treechat import bounded_json
from treechat.bounded_json import RawJson
from treechat.storage.model import AssistantMessage, ContentBlock, ImageContent, TextContent, ToolCall

from .errors import ProviderError
from .sse import SSEEvent
from .types import ModelInfo

INVALID_ARGS_KEY = "__invalid_json__"  # where arguments that are not a JSON object keep the model's text
NO_OUTPUT = "(no output)"  # a tool result with no text: an empty one is refused by some servers


def chunk_json(sse: SSEEvent, provider: str) -> RawJson:
    """An event's data as JSON; data that is not JSON ends the reply with one sentence."""
    try:
        return bounded_json.loads(sse.data)
    except ValueError:
        raise ProviderError(
            "protocol", f"{provider} sent a malformed chunk ({sse.data[:60]!r}); the reply is incomplete."
        ) from None


def set_arguments(call: ToolCall, raw: str) -> None:
    """A tool call's arguments from the JSON text the model wrote. Text that is not a JSON object
    is kept as the arguments (under INVALID_ARGS_KEY) and named in `arguments_error`: the loop
    answers the call with that error, which the model sees."""
    call.arguments, call.arguments_error = {}, None
    if not raw.strip():
        return
    try:
        value = bounded_json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        call.arguments = value
        return
    call.arguments = {INVALID_ARGS_KEY: raw}
    call.arguments_error = f'The arguments for tool "{call.name}" were not valid JSON: {raw}'


def tool_call_at(message: AssistantMessage, index: int) -> ToolCall:
    """The tool call a parser put at `index` (it remembers where it appended each)."""
    block = message.content[index]
    assert isinstance(block, ToolCall)  # the index came from appending this tool call
    return block


def tool_text(content: list[ContentBlock]) -> str:
    """A tool result's text blocks, joined; NO_OUTPUT when there are none."""
    return "\n".join(b.text for b in content if isinstance(b, TextContent)) or NO_OUTPUT


def data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def token_count(value: object) -> int | None:
    """A token count as a server reported it: None for anything that is not a number (token counts
    are only reported: a count of the wrong kind is left out, not a failure)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(0, int(value))


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """OpenAI's (and every compatible server's) request headers for a stream."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def reasoning_effort(model: ModelInfo, level: str) -> str | None:
    """OpenAI's `reasoning_effort` / `reasoning.effort` for a thinking level: None when the model
    does not think or thinking is off; xhigh only where the catalog says the model has it (else
    high), minimal only where it is not said to be missing (else low: the codex models refuse it)."""
    if not model.reasoning or not level or level == "off":
        return None
    if level == "xhigh" and not model.compat.supports_xhigh:
        return "high"
    if level == "minimal" and not model.compat.supports_minimal:
        return "low"
    return level
