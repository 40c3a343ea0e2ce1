"""Sessions to export (a branched one with every kind of entry, a hostile one) and readers of the
exported page: its JSON records, its bodies as text, and an audit of every tag and attribute."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from tests.narrow import of
from treechat.session.session import Session
from treechat.storage.base import SessionCatalog, SessionStorage
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    parse_entry,
)

# ---------------------------------------------------------------- sessions


@dataclass
class Built:
    storage: SessionStorage
    ids: dict[str, str]  # name in the test → entry id
    texts: dict[str, list[str]] = field(default_factory=dict)  # entry id → strings its record must show


def _assistant(text: str, *, model: str = "claude-test", blocks: list[Any] | None = None,
               inp: int = 100, out: int = 20, cost: float = 0.01) -> AssistantMessage:
    return AssistantMessage(
        content=[*(blocks or []), TextContent(text=text)], api="anthropic-messages", provider="anthropic",
        model=model, usage=Usage(input=inp, output=out, total_tokens=inp + out, cost=Cost(total=cost)),
        stop_reason="stop",
    )


async def branched_session(catalog: SessionCatalog) -> Built:
    """Two branches after a2 (alpha and beta), a compaction on beta, a branch summary beside a1,
    settings changes, a label, a name, a custom message, shell output and a 40-line tool result."""
    storage = await catalog.create(cwd="/home/someone/project")
    s = await Session.open(storage)
    ids: dict[str, str] = {}
    texts: dict[str, list[str]] = {}

    async def add(name: str, coro: Any, *expected: str) -> str:
        ids[name] = await coro
        texts[ids[name]] = list(expected)
        return ids[name]

    await add("name", s.append_session_info("Planner session"), "Planner session")
    await add("model", s.append_model_change("anthropic", "claude-sonnet-4-5"), "anthropic/claude-sonnet-4-5")
    await add("thinking", s.append_thinking_level_change("high"), "high")
    await add("tools", s.append_active_tools_change(["read", "bash"]), "read, bash")
    await add("u1", s.append_message(UserMessage(content="alphaprompt how do I parse TOML?")), "alphaprompt how do I parse TOML?")
    a1 = _assistant(
        "Use **tomllib**:\n\n```python\nimport tomllib\nwith open('x.toml', 'rb') as f:\n    data = tomllib.load(f)\n```\n\n"
        "| name | size |\n|:--|--:|\n| tomlfile | 12 |\n\nSee [the docs](https://docs.python.org/3/library/tomllib.html).",
        blocks=[ThinkingContent(thinking="thinkingword the user wants tomllib"),
                ToolCall(id="call1", name="read", arguments={"path": "pyproject.toml"})],
    )
    await add("a1", s.append_message(a1), "tomllib", "import tomllib", "tomlfile", "the docs",
              "thinkingword the user wants tomllib", "pyproject.toml", "anthropic/claude-test")
    output = "\n".join(f"resultline {i} of the file" for i in range(40))
    await add("t1", s.append_message(ToolResultMessage(tool_call_id="call1", tool_name="read",
                                                        content=[TextContent(text=output)])),
              "resultline 0 of the file", "resultline 39 of the file")
    await add("a2", s.append_message(_assistant("answertwo it is a TOML file")), "answertwo it is a TOML file")
    await add("u2", s.append_message(UserMessage(content="alphabranch what about YAML?")), "alphabranch what about YAML?")
    await add("a3", s.append_message(_assistant("alphaanswer use PyYAML", model="claude-other")), "alphaanswer use PyYAML")
    await s.move_to(ids["a2"])
    await add("u3", s.append_message(UserMessage(content="betabranch what about JSON?")), "betabranch what about JSON?")
    await add("a4", s.append_message(_assistant("betaanswer the json module")), "betaanswer the json module")
    await add("bash", s.append_message(BashExecutionMessage(command="ls -la bashcommandword", output="bashoutputword total 0",
                                                             exit_code=0)),
              "ls -la bashcommandword", "bashoutputword total 0")
    await add("custom", s.append_custom_message("note", "custommessageword from an extension"),
              "custommessageword from an extension")
    await add("ext", s.append_custom("ext-state", {"k": "customdataword"}), "customdataword")
    await add("compaction", s.append_compaction("compactsummaryword earlier work on TOML", ids["u3"], 5000,
                                                tokens_after=1200, trigger="manual"),
              "compactsummaryword earlier work on TOML")
    await add("u4", s.append_message(UserMessage(content=[
        TextContent(text="aftercompactword next step"),
        ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
    ])), "aftercompactword next step")
    await add("a5", s.append_message(_assistant("finalanswerword done")), "finalanswerword done")
    await s.move_to(ids["u1"], summary="branchsummaryword we tried another approach")
    ids["summary"] = s.leaf_id or ""
    texts[ids["summary"]] = ["branchsummaryword we tried another approach"]
    await s.move_to(ids["a5"])
    await add("label", s.append_label(ids["a3"], "alpha-label"), "alpha-label")
    return Built(storage, ids, texts)


HOSTILE = {
    "script": "<script>window.__pwned = 'script'</script>",
    "img": '<img src=x onerror="window.__pwned=\'img\'">',
    "js_link": "[click me](javascript:window.__pwned='link')",
    "js_link_upper": "[again](JaVaScRiPt:window.__pwned='link2')",
    "data_link": "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "raw_block": '<div onclick="window.__pwned=\'div\'">raw html block</div>',
    "raw_anchor": '<a href="javascript:window.__pwned=\'a\'">raw anchor</a>',
    "remote_image": "![tracker](https://tracker.example/pixel.png)",
    "iframe": '<iframe src="https://evil.example/"></iframe>',
    "svg": "<svg onload=\"window.__pwned='svg'\"><circle r=1></circle></svg>",
    "style": "<style>body{background:url(https://evil.example/x.png)}</style>",
    "close_script": "</script><script>window.__pwned='close'</script><!--",
    "fence": "```\"><script>window.__pwned='fence'</script>\ncode\n```",
    "terminal": "before\x1b]52;c;cHduZWQ=\x07\x1b[31mred\x1b[0m\x9b2Jafter\u202eevil",
    "autolink": "<javascript:window.__pwned='auto'>",
}


async def hostile_session(catalog: SessionCatalog) -> Built:
    """Hostile text everywhere content can reach the page: messages, tool output, labels, the
    session name, the cwd, model and tool names, custom types — and entry ids from a crafted file."""
    evil_id = '"><img src=x onerror="window.__pwned=\'id\'">'
    md = "\n\n".join(HOSTILE.values())
    raw = [
        {"type": "session_info", "id": "n1", "parentId": None, "name": "</title><script>window.__pwned='title'</script>"},
        {"type": "model_change", "id": "m1", "parentId": "n1", "provider": "<b onmouseover=x>", "modelId": "<svg onload=y>"},
        {"type": "message", "id": evil_id, "parentId": "m1",
         "message": {"role": "user", "content": md, "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": evil_id, "message": {
            "role": "assistant", "content": [
                {"type": "thinking", "thinking": HOSTILE["script"]},
                {"type": "text", "text": md},
                {"type": "toolCall", "id": "c1", "name": "<img src=x onerror=z>", "arguments": {"cmd": HOSTILE["img"]}},
                {"type": "image", "data": "\"><script>x</script>", "mimeType": "image/png"},
                {"type": "image", "data": "AAAA", "mimeType": "text/html"},
            ],
            "api": "x", "provider": "<i>", "model": HOSTILE["script"], "usage": {}, "stopReason": "error",
            "errorMessage": HOSTILE["img"], "timestamp": 2}},
        {"type": "message", "id": "t1", "parentId": "a1", "message": {
            "role": "toolResult", "toolCallId": "c1", "toolName": HOSTILE["svg"],
            "content": [{"type": "text", "text": HOSTILE["close_script"] + "\n" + HOSTILE["terminal"]}],
            "isError": True, "timestamp": 3}},
        {"type": "custom_message", "id": "cm", "parentId": "t1", "customType": HOSTILE["img"],
         "content": HOSTILE["raw_block"], "display": True},
        {"type": "compaction", "id": "c", "parentId": "cm", "summary": md, "firstKeptEntryId": "t1",
         "tokensBefore": 10, "trigger": HOSTILE["script"]},
        {"type": "branch_summary", "id": "b", "parentId": "c", "fromId": evil_id, "summary": md},
        {"type": "custom", "id": "x", "parentId": "b", "customType": HOSTILE["svg"], "data": {"h": HOSTILE["script"]}},
        {"type": "label", "id": "l", "parentId": "x", "targetId": "a1", "label": HOSTILE["img"]},
        {"type": HOSTILE["script"], "id": "u", "parentId": "l", "extra": HOSTILE["img"]},
    ]
    for i, entry in enumerate(raw):
        assert isinstance(entry, dict)
        entry["timestamp"] = f"2026-01-01T00:00:{i:02d}.000Z"
    entries = [parse_entry(of(dict, e)) for e in raw]
    header = {"type": "session", "version": 3, "id": "hostile-session", "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": HOSTILE["script"]}
    storage, _ = await catalog.import_session(header, entries, "l")
    return Built(storage, {"evil": evil_id})


# ---------------------------------------------------------------- reading the page


class Collect(HTMLParser):
    """Every start tag with its attributes, the text, and the raw text of <script>/<style>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.raw: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in self.raw:
            self._in = tag
            self.raw[tag].append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.raw[self._in][-1] += data
        else:
            self.text.append(data)


def parse(html: str) -> Collect:
    c = Collect()
    c.feed(html)
    c.close()
    return c


def payload(html: str) -> dict[str, Any]:
    """The page's data: the JSON in <script type="application/json" id="session-data">."""
    doc = parse(html)
    blocks = [raw for (tag, attrs), raw in zip([t for t in doc.tags if t[0] == "script"], doc.raw["script"])
              if attrs.get("type") == "application/json"]
    assert len(blocks) == 1
    return json.loads(blocks[0])


def record_text(record: list[Any]) -> str:
    """What a person can read of one record: its body as text, its preview, and its extra values."""
    body = "".join(parse(record[6]).text)
    return "\n".join([body, record[5] or "", json.dumps(record[7], ensure_ascii=False)])


UNSAFE_URL = re.compile(r"^\s*(javascript|vbscript|data|file):", re.IGNORECASE)
URL_ATTRS = {"href", "src", "action", "formaction", "poster", "srcset", "xlink:href", "background", "cite", "data"}


def audit(tags: list[tuple[str, dict[str, str | None]]], *, allow_scripts: bool = False) -> list[str]:
    """Everything in these tags that could run or load: handlers, scripts, frames, remote or
    script URLs, style attributes. An empty list is a clean bill."""
    problems = []
    for tag, attrs in tags:
        if tag in {"iframe", "frame", "object", "embed", "base", "form", "svg", "math", "link", "meta", "style",
                   "video", "audio", "source", "track", "applet"}:
            problems.append(f"<{tag}>")
        if tag == "script" and not allow_scripts:
            problems.append("<script>")
        for name, value in attrs.items():
            v = (value or "").strip()
            if name.startswith("on"):
                problems.append(f"<{tag} {name}>")
            if name == "style":
                problems.append(f"<{tag} style>")
            if name in URL_ATTRS:
                if tag == "img" and name == "src" and re.match(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$", v):
                    continue
                if tag == "a" and name == "href" and re.match(r"(https?://|mailto:)", v, re.IGNORECASE):
                    continue
                problems.append(f"<{tag} {name}={v[:60]!r}>")
    return problems
