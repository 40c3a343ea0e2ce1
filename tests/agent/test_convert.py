"""convert_to_llm: Pi's prefixes and suffixes, dropping what a provider must not see, never raising."""

from __future__ import annotations

from typing import cast

from treechat.agent.convert import convert_to_llm
from treechat.agent.types import AgentMessage
from treechat.storage.model import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    UnknownMessage,
    UserMessage,
)


def only_text(msg) -> str:
    assert msg.role == "user"
    return msg.content[0].text


def test_llm_roles_pass_through_unchanged() -> None:
    msgs: list[AgentMessage] = [UserMessage(content="u"), AssistantMessage(), ToolResultMessage(tool_call_id="t", tool_name="x")]
    assert convert_to_llm(msgs) == msgs


def test_summaries_use_pis_exact_wording() -> None:
    comp, branch = convert_to_llm([CompactionSummaryMessage(summary="S", tokens_before=5),
                                   BranchSummaryMessage(summary="B", from_id="abc")])
    assert only_text(comp) == ("The conversation history before this point was compacted into the following "
                               "summary:\n\n<summary>\nS\n</summary>")
    assert only_text(branch) == ("The following is a summary of a branch that this conversation came back "
                                 "from:\n\n<summary>\nB</summary>")


def test_custom_becomes_user_content_without_details() -> None:
    (a,) = convert_to_llm([CustomMessage(custom_type="n", content="hello", details={"secret": 1})])
    assert a.content == [TextContent(text="hello")] and "secret" not in str(a)
    (b,) = convert_to_llm([CustomMessage(custom_type="n", content=[TextContent(text="x")])])
    assert b.content == [TextContent(text="x")]


def test_bash_execution_text() -> None:
    ok, empty, failed, cancelled, truncated = convert_to_llm([
        BashExecutionMessage(command="ls", output="a\nb", exit_code=0),
        BashExecutionMessage(command="true", output=""),
        BashExecutionMessage(command="false", output="x", exit_code=1),
        BashExecutionMessage(command="sleep", output="", exit_code=1, cancelled=True),
        BashExecutionMessage(command="cat", output="y", truncated=True, full_output_path="/tmp/o"),
    ])
    assert only_text(ok) == "Ran `ls`\n```\na\nb\n```"
    assert only_text(empty) == "Ran `true`\n(no output)"
    assert only_text(failed) == "Ran `false`\n```\nx\n```\n\nCommand exited with code 1"
    assert only_text(cancelled) == "Ran `sleep`\n(no output)\n\n(command cancelled)"
    assert only_text(truncated).endswith("\n\n[Output truncated. Full output: /tmp/o]")


def test_excluded_bash_and_unknown_roles_are_dropped_and_it_never_raises() -> None:
    weird = CustomMessage(custom_type="x", content="ok")
    weird.content = 42  # type: ignore[assignment]  # malformed after the fact
    out = convert_to_llm([
        BashExecutionMessage(command="ls", exclude_from_context=True),
        UnknownMessage(role="future"),
        weird,
        cast(AgentMessage, object()),  # not a message at all: dropped too
        UserMessage(content="kept"),
    ])
    assert [m.content for m in out] == ["kept"]
