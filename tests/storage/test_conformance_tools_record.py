"""The tools record a Pi export writes (a `custom` entry of type model.TOOLS_RECORD, which Pi
0.73.1 hides instead of drawing an empty row) means what an `active_tools_change` does, on every
backend: appended, reopened, and below it on the path."""

from __future__ import annotations

from treechat.storage.model import TOOLS_RECORD, CustomEntry, MessageEntry, UserMessage


async def test_a_tools_record_in_a_custom_entry_sets_the_path_tools(catalog) -> None:
    storage = await catalog.create()
    await storage.append_entry(MessageEntry(id="u1", parent_id=None, message=UserMessage(content="hi")))
    await storage.append_entry(CustomEntry(id="t1", parent_id="u1", custom_type=TOOLS_RECORD,
                                           active_tool_names=["read", "bash"]))
    await storage.append_entry(MessageEntry(id="u2", parent_id="t1", message=UserMessage(content="again")))
    await storage.append_entry(CustomEntry(id="c1", parent_id="u2", custom_type="treechat.files", data={"x": 1}))
    for s in (storage, await catalog.open(storage.session_id)):
        assert (await s.get_path_state("u1")).active_tool_names is None
        assert (await s.get_path_state("t1")).active_tool_names == ["read", "bash"]
        assert (await s.get_path_state("c1")).active_tool_names == ["read", "bash"]  # other custom entries: no record
        assert {r.id: r.preview for r in await s.get_tree_rows()}["t1"] == "tools: read, bash"
