from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from treechat.widgets.transcript.copy_text import Part, code_blocks, copy_text, markdown_parts, what_is

NESTED = """Steps:

1. install

   ```bash
   pip install x
   ```

> quoted:
>
>     indented in a quote

Top:

```python
def f():

    return 1
```

    indented block
    second line
"""


def test_code_blocks_are_exactly_their_content():
    blocks = code_blocks(NESTED)
    assert [(b.code, b.language, b.top_level) for b in blocks] == [
        ("pip install x", "bash", False),
        ("indented in a quote", "", False),
        ("def f():\n\n    return 1", "python", True),  # inner blank line and indentation kept
        ("indented block\nsecond line", "", True),
    ]
    assert code_blocks("no code here, just `inline` and text") == ()
    assert code_blocks("~~~\ntilde fence\n~~~")[0].code == "tilde fence"


def test_markdown_parts_cut_at_top_level_blocks_and_name_nested_ones():
    parts = markdown_parts(NESTED)
    assert [(p.code, p.nested) for p in parts] == [(None, (0, 1)), (2, ()), (3, ())]
    assert parts[1].source.startswith("```python") and parts[1].source.endswith("```")
    assert "Top:" in parts[0].source
    assert markdown_parts("just text") == [Part("just text")] and markdown_parts("  ") == []


def test_copy_text_is_what_a_person_would_paste():
    reply = AssistantMessage(model="m", content=[ThinkingContent(thinking="hidden"), TextContent(text="Use:"),
                                                 ToolCall(id="1", name="bash", arguments={"command": "ls"}),
                                                 TextContent(text="```sh\nls\n```")])
    assert copy_text(reply) == "Use:\n\n```sh\nls\n```"  # no thinking, fences kept
    tools_only = AssistantMessage(model="m", content=[ToolCall(id="1", name="read", arguments={"path": "a.py"})])
    assert copy_text(tools_only) == 'read {"path": "a.py"}'
    assert copy_text(UserMessage(content="hi\x1b[2J there\x1b]52;c;ZXZpbA==\x07")) == "hi there"  # never raw escapes
    result = ToolResultMessage(tool_call_id="1", tool_name="bash", content=[TextContent(text="a\nb")])
    assert copy_text(result) == "a\nb" and what_is(result) == "the output"
    assert copy_text(BashExecutionMessage(command="ls", output="x y", exit_code=0)) == "x y"
    card = CompactionEntry(id="k", parent_id=None, summary="## Goal", tokens_before=1)
    assert copy_text(card) == "## Goal" and what_is(card) == "the summary"
    assert what_is(reply) == "the reply" and what_is(UserMessage(content="q")) == "your message"
