"""Parallel sub-agents that change files do not collide (issue 39), on every backend, against the
loopback fake: in a git repository the first `task` child that can change files works in the
caller's folder and each one started while it goes works in a git worktree of its own, whose
changes come into the caller's folder when it ends (never over a file changed there since it
started: the result names it, with the diff); no worktree is left; outside git the second such
child is refused with the reason, and the first works as before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.chat.test_worktrees import make_repo, new_chat, seed, wait_for, worktrees_left
from tests.fake_provider import FakeProvider, Gate, openai_chunks, sse_frame
from treechat.chat.events import RestoreOffered
from treechat.storage.model import MessageEntry, ToolResultMessage, message_text
from treechat.workspace.history import FileHistory

TOOLS = ["read", "write", "edit", "bash", "task"]


def task(call_id: str, prompt: str) -> dict[str, str]:
    return {"id": call_id, "name": "task", "arguments": json.dumps({"description": f"job {call_id}", "prompt": prompt})}


def write(call_id: str, path: str, content: str) -> dict[str, str]:
    return {"id": call_id, "name": "write", "arguments": json.dumps({"path": path, "content": content})}


class Children:
    """The parent's first request calls `task` for each of `calls`; a child asked `child X` writes
    what `writes[X]` says, held until `holds[X]` is set (when given); after its tool results it
    answers `X done` and sets `wrote[X]`; the parent, after the results, says `all done`."""

    def __init__(self, fake: FakeProvider, calls: list[str], writes: dict[str, list[tuple[str, str]]],
                 holds: dict[str, asyncio.Event]) -> None:
        self.fake, self.calls, self.writes, self.holds = fake, calls, writes, holds
        self.wrote = {name: asyncio.Event() for name in calls}
        self.asked = {name: asyncio.Event() for name in calls}
        self.held = asyncio.Event()
        fake.responder = self._answer

    def _frames(self, chunks: list[bytes], hold: asyncio.Event | None = None) -> list[Any]:
        steps = self.fake.sse_steps([sse_frame(c) for c in chunks])
        return [steps[0], Gate(hold), *steps[1:]] if hold is not None else steps

    def _answer(self, request: Any) -> list[Any] | None:
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        if not messages:
            return None
        first = [m for m in messages if m.get("role") == "user"][-1]["content"]
        first = first if isinstance(first, str) else " ".join(p.get("text", "") for p in first)
        after_tools = messages[-1].get("role") == "tool"
        if first == "hold":  # another run, going in the checkout until `held` is set
            return self._frames(openai_chunks(["held"]), self.held)
        if first == "go":
            if after_tools:
                return self._frames(openai_chunks(["all done"]))
            return self._frames(openai_chunks(tool_calls=[task(n, f"child {n}") for n in self.calls]))
        name = first.split()[-1]
        if after_tools:
            self.wrote[name].set()
            return self._frames(openai_chunks([f"{name} done"]))
        self.asked[name].set()
        calls = [write(f"{name}{i}", path, content) for i, (path, content) in enumerate(self.writes[name])]
        return self._frames(openai_chunks(tool_calls=calls), self.holds.get(name))


async def results(chat: Any) -> dict[str, ToolResultMessage]:
    return {e.message.tool_call_id: e.message for e in await chat.session.get_branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)}


async def test_parallel_children_in_git_each_change_files_without_colliding(catalog, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    async with FakeProvider() as fake:
        person_done = asyncio.Event()
        children = Children(fake, ["a", "b", "c"], {
            "a": [("a.txt", "A\n"), ("shared.txt", "from a\n")],
            "b": [("b.txt", "B\n"), ("shared.txt", "from b\n")],  # after a wrote it: b's is not brought in
            "c": [("c.txt", "C\n"), ("readme.txt", "from c\n")],  # the person changes readme.txt meanwhile
        }, {})
        children.holds["b"] = children.wrote["a"]
        children.holds["c"] = person_done
        chat = new_chat(catalog, fake, home, repo, TOOLS)
        await chat.open(await catalog.create(cwd=str(repo)))
        await chat.send("go")
        await children.asked["c"].wait()  # c's worktree is made (from the folder as it was)
        (repo / "readme.txt").write_text("the person's\n")
        person_done.set()
        await chat.wait_idle()

        # the caller's folder: every different file came in; a's shared.txt (a worked there) and
        # the person's readme.txt were never overwritten
        assert {p: (repo / p).read_text() for p in ["a.txt", "b.txt", "c.txt", "shared.txt", "readme.txt"]} == {
            "a.txt": "A\n", "b.txt": "B\n", "c.txt": "C\n", "shared.txt": "from a\n", "readme.txt": "the person's\n"}
        got = await results(chat)
        a, b, c = got["a"], got["b"], got["c"]
        assert message_text(a) == "a done" and not a.is_error  # in the caller's folder, as one child always was
        assert isinstance(b.details, dict) and b.details["worktree"] is True
        assert b.details["broughtIn"] == ["b.txt"] and b.details["keptYours"] == ["shared.txt"]
        text_b = message_text(b)
        assert text_b.startswith("b done") and "Came into this folder: b.txt." in text_b
        assert "shared.txt" in text_b and "+from b" in text_b and "-from a" in text_b  # how to get its version
        assert isinstance(c.details, dict) and c.details["broughtIn"] == ["c.txt"]
        assert c.details["keptYours"] == ["readme.txt"] and "+from c" in message_text(c)
        assert worktrees_left(home) == []

        # what came in is recorded on the caller's branch as the task call's checkpoints (named as
        # the checkout's files), so moving back before it offers to undo them
        history = await FileHistory.load(chat.session.storage)
        by_task = {(cp.tool_call_id, ch.path) for cp in history.checkpoints if cp.tool == "task" for ch in cp.changes}
        assert by_task == {("b", str(repo / "b.txt")), ("c", str(repo / "c.txt"))}
        await chat.close()


async def test_children_of_a_run_in_its_own_worktree_bring_their_files_there(catalog, tmp_path: Path) -> None:
    """A caller that works in a worktree (another run changes files in the checkout): its second
    child's worktree is made from the caller's, its files come into the caller's, and the checkout
    is untouched until the person picks the branch, whose offer holds both children's files."""
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    async with FakeProvider() as fake:
        children = Children(fake, ["a", "b"], {"a": [("a.txt", "A\n")], "b": [("b.txt", "B\n")]}, {})
        children.holds["b"] = children.wrote["a"]  # b ends after a wrote in the caller's folder
        chat = new_chat(catalog, fake, home, repo, TOOLS)
        offers: list[RestoreOffered] = []
        chat.subscribe(lambda e: offers.append(e) if isinstance(e, RestoreOffered) else None)
        await chat.open(await catalog.create(cwd=str(repo)))
        a1 = await seed(chat)
        assert await chat.send("hold") == "sent"  # r1, in the checkout
        await wait_for(lambda: len(fake.requests) == 1, "r1's request")
        await chat.move_to(a1)
        assert await chat.send("go") == "sent"  # r2, in a worktree of its own, calls a and b
        await wait_for(lambda: {t.run for t in chat.runs} == {"r1"}, "r2 to end")
        await wait_for(lambda: bool(offers), "the offer of r2's files")
        got = await results(chat)
        assert isinstance(got["b"].details, dict) and got["b"].details["broughtIn"] == ["b.txt"]
        assert not (repo / "a.txt").exists() and not (repo / "b.txt").exists()  # the checkout untouched
        assert {s.shown for s in offers[-1].plan.ready} == {"a.txt", "b.txt"}
        assert worktrees_left(home) == []
        children.held.set()
        await chat.wait_idle()
        await chat.close()


async def test_outside_git_a_second_file_changing_child_is_refused(catalog, tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    home = tmp_path / "home"
    async with FakeProvider() as fake:
        children = Children(fake, ["a", "b"], {"a": [("a.txt", "A\n")], "b": [("b.txt", "B\n")]}, {})
        chat = new_chat(catalog, fake, home, folder, TOOLS)
        await chat.open(await catalog.create(cwd=str(folder)))
        await chat.send("go")
        await chat.wait_idle()
        got = await results(chat)
        assert message_text(got["a"]) == "a done" and (folder / "a.txt").read_text() == "A\n"
        assert got["b"].is_error and "not a git repository" in message_text(got["b"])
        assert "Call this task again" in message_text(got["b"])
        assert not (folder / "b.txt").exists() and not children.asked["b"].is_set()  # b never ran
        assert worktrees_left(home) == []
        await chat.close()
