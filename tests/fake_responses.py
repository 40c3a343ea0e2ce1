"""The OpenAI Responses API's documented event stream, for the loopback fake (`FakeProvider`).

    fake.script_responses(["Hel", "lo"], reasoning=[["Plan", "ning"]], encrypted="enc-1")

`responses_events` builds (event name, data) pairs as the API reference's "Responses streaming
events" describe them, in the order OpenAI sends them: `response.created`, `response.in_progress`,
then per output item `response.output_item.added`, its parts and deltas
(`response.reasoning_summary_part.added`, `response.reasoning_summary_text.delta` / `.done`,
`response.reasoning_summary_part.done`; `response.content_part.added`,
`response.output_text.delta` / `.done`, `response.content_part.done`;
`response.function_call_arguments.delta` / `.done`) and `response.output_item.done`; then one end:
`response.completed`, `response.incomplete` or `response.failed`. Every event has its
`sequence_number`; there is no `[DONE]`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

End = Literal["completed", "incomplete", "failed"]


def responses_events(
    text: Iterable[str] = (),
    *,
    reasoning: Iterable[Iterable[str]] = (),
    encrypted: str | None = None,
    tool_calls: Iterable[dict[str, Any]] = (),
    usage: dict[str, Any] | None = None,
    end: End = "completed",
    reason: str = "max_output_tokens",
    error: dict[str, Any] | None = None,
    model: str = "fake-model",
) -> list[tuple[str, dict[str, Any]]]:
    """A streamed response. `reasoning`: the summary's parts, each as its deltas (a reasoning item
    is sent when there are parts or `encrypted`); a tool call is {"call_id", "name", "arguments":
    [fragments]}; `end` "incomplete" says `reason`, "failed" says `error`."""
    out: list[tuple[str, dict[str, Any]]] = []
    response: dict[str, Any] = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
                                "model": model, "output": [], "usage": None, "error": None,
                                "incomplete_details": None}

    def send(kind: str, **fields: Any) -> None:
        out.append((kind, {"type": kind, "sequence_number": len(out), **fields}))

    send("response.created", response=dict(response))
    send("response.in_progress", response=dict(response))
    output: list[dict[str, Any]] = []
    parts = [list(p) for p in reasoning]
    if parts or encrypted is not None:
        index, rid = len(output), "rs_1"
        send("response.output_item.added", output_index=index, item={"id": rid, "type": "reasoning", "summary": []})
        summary = []
        for j, deltas in enumerate(parts):
            where = {"item_id": rid, "output_index": index, "summary_index": j}
            send("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
            for delta in deltas:
                send("response.reasoning_summary_text.delta", **where, delta=delta)
            whole = "".join(deltas)
            send("response.reasoning_summary_text.done", **where, text=whole)
            send("response.reasoning_summary_part.done", **where, part={"type": "summary_text", "text": whole})
            summary.append({"type": "summary_text", "text": whole})
        item: dict[str, Any] = {"id": rid, "type": "reasoning", "summary": summary}
        if encrypted is not None:
            item["encrypted_content"] = encrypted
        send("response.output_item.done", output_index=index, item=item)
        output.append(item)
    pieces = list(text)
    if pieces:
        index, mid = len(output), "msg_1"
        send("response.output_item.added", output_index=index, item={"id": mid, "type": "message",
             "status": "in_progress", "role": "assistant", "content": []})
        where = {"item_id": mid, "output_index": index, "content_index": 0}
        send("response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []})
        for delta in pieces:
            send("response.output_text.delta", **where, delta=delta, logprobs=[])
        whole = "".join(pieces)
        send("response.output_text.done", **where, text=whole, logprobs=[])
        part = {"type": "output_text", "text": whole, "annotations": []}
        send("response.content_part.done", **where, part=part)
        item = {"id": mid, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        send("response.output_item.done", output_index=index, item=item)
        output.append(item)
    for n, call in enumerate(tool_calls):
        index, fid = len(output), f"fc_{n + 1}"
        frags = call.get("arguments", [])
        frags = [frags] if isinstance(frags, str) else list(frags)
        head = {"id": fid, "type": "function_call", "status": "in_progress", "call_id": call["call_id"],
                "name": call["name"], "arguments": ""}
        send("response.output_item.added", output_index=index, item=head)
        for frag in frags:
            send("response.function_call_arguments.delta", item_id=fid, output_index=index, delta=frag)
        send("response.function_call_arguments.done", item_id=fid, output_index=index, arguments="".join(frags))
        item = {**head, "status": "completed", "arguments": "".join(frags)}
        send("response.output_item.done", output_index=index, item=item)
        output.append(item)
    counts = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    counts.update(usage or {})
    final = {**response, "status": end, "output": output, "usage": counts}
    if end == "incomplete":
        final["incomplete_details"] = {"reason": reason}
    if end == "failed":
        final["error"] = error or {"code": "server_error", "message": "The model failed to answer."}
    send(f"response.{end}", response=final)
    return out


def whole_response(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The `response` object the same reply is without streaming (the last event's)."""
    return events[-1][1]["response"]
