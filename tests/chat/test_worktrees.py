"""Work that does not collide (issue 39): in a git repository, a run that can change files started
while another such run goes works in a git worktree of its own; the person's checkout is untouched
until they pick a branch, and `treechat restore` brings any branch's files in (with --undo); a
worktree left by a process killed with SIGKILL is removed at the next start; outside git such a
second run is refused with one line, nothing sent, and a read-only one may go."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, openai_chunks, sse_frame
from treechat.chat import Chat, ChatError
from treechat.chat.events import Notice, RestoreOffered
from treechat.cli.main import main
from treechat.config.settings import load_settings
from treechat.llm.registry import ModelRegistry
from treechat.storage import open_catalog
from treechat.storage.model import AssistantMessage, MessageEntry, TextContent, UserMessage, message_text
from treechat.workspace.worktrees import make_worktree, remove_worktree

FILE_TOOLS = ["read", "write", "edit", "bash"]


async def wait_for(predicate: Any, what: str) -> None:
    for _ in range(6000):  # (git under load: generous)
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "notes.txt").write_text("base\n")
    (path / "readme.txt").write_text("r0\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    (path / "readme.txt").write_text("r1\n")  # uncommitted: the person's working state
    (path / "draft.txt").write_text("mine\n")  # untracked, not ignored
    return path


class Replies:
    """By the first word of the last prompt: `hold` is a text reply held until released;
    `edit-X` writes notes.txt as "edit-X" and edits draft.txt's "mine" (which exists only in the
    person's working state) to "mine edit-X"; after a tool result, "done"."""

    def __init__(self, fake: FakeProvider) -> None:
        self.fake, self.gate = fake, asyncio.Event()
        self.asked: list[str] = []  # the first word of each prompt, as its first request arrives
        fake.responder = self._answer

    def _answer(self, request: Any) -> list[Any] | None:
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        if not messages:
            return None
        if messages[-1].get("role") == "tool":
            return self.fake.sse_steps([sse_frame(c) for c in openai_chunks(["done"])])
        content = [m for m in messages if m.get("role") == "user"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        word = text.split()[0]
        self.asked.append(word)
        if word == "hold":
            return self.fake.sse_steps([sse_frame(c) for c in openai_chunks(["held", " reply"])], gate=self.gate,
                                       gate_after=1)
        calls = [{"id": "c1", "name": "write", "arguments": json.dumps({"path": "notes.txt", "content": f"{word}\n"})},
                 {"id": "c2", "name": "edit", "arguments": json.dumps(
                     {"path": "draft.txt", "edits": [{"oldText": "mine", "newText": f"mine {word}"}]})}]
        return self.fake.sse_steps([sse_frame(c) for c in openai_chunks(tool_calls=calls)])


async def allow(change: object) -> bool:
    return True


def new_chat(catalog: Any, fake: FakeProvider, home: Path, cwd: Path, tools: list[str]) -> Chat:
    env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"}
    settings = load_settings(home, env=env)
    chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                model_ref="openai/fake-model", tools=tools, cwd=str(cwd), local_servers=())
    chat.approve_change = allow
    return chat


async def seed(chat: Chat) -> str:
    await chat.session.append_message(UserMessage(content="q1"))
    return await chat.session.append_message(AssistantMessage(content=[TextContent(text="a1")], provider="openai",
                                                              model="fake-model"))


def worktrees_left(home: Path) -> list[Path]:
    top = home / "worktrees"
    return sorted(top.rglob("*")) if top.exists() else []


def test_three_branches_editing_one_file_leave_the_checkout_untouched_and_restore_brings_any_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path / "work")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(repo)
    tips: dict[str, str] = {}

    async def scenario() -> str:
        catalog = await open_catalog("sqlite", home)
        async with FakeProvider() as fake:
            replies = Replies(fake)
            chat = new_chat(catalog, fake, home, repo, FILE_TOOLS)
            offers: list[RestoreOffered] = []
            told: list[str] = []
            chat.subscribe(lambda e: offers.append(e) if isinstance(e, RestoreOffered) else None)
            chat.subscribe(lambda e: told.append(e.text) if isinstance(e, Notice) else None)
            await chat.open(await catalog.create(cwd=str(repo)))
            a1 = await seed(chat)
            assert await chat.send("hold on") == "sent"  # r1: in the checkout, going
            await wait_for(lambda: len(fake.requests) == 1, "r1's request")
            for word in ("edit-A", "edit-B", "edit-C"):  # r2, r3, r4: a worktree each
                await chat.move_to(a1)
                assert await chat.send(f"{word} please") == "sent"
                await wait_for(lambda word=word: word in replies.asked, f"{word}'s request")  # its prompt is its tip
            await wait_for(lambda: {t.run for t in chat.runs} == {"r1"}, "the three editing runs to end")
            # the person was at r4's tip when it ended: its files are offered, nothing written
            await wait_for(lambda: bool(offers), "the offer of r4's files")
            assert {s.shown for s in offers[-1].plan.ready} == {"notes.txt", "draft.txt"}
            assert (repo / "notes.txt").read_text() == "base\n" and (repo / "draft.txt").read_text() == "mine\n"
            assert (repo / "readme.txt").read_text() == "r1\n"
            assert worktrees_left(home) == []  # each went when its run ended
            assert sum("works in a git worktree of its own" in t for t in told) == 3  # each start said so
            assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
            replies.gate.set()
            await chat.wait_idle()
            for entry in await chat.session.storage.find_entries("message"):
                if isinstance(entry, MessageEntry) and message_text(entry.message) == "done":
                    path = await chat.session.storage.get_path_to_root(entry.id)
                    prompt = next(message_text(e.message) for e in path if isinstance(e, MessageEntry)
                                  and isinstance(e.message, UserMessage) and message_text(e.message) != "q1")
                    tips[prompt.split()[0]] = entry.id
            sid = chat.session_id
            await chat.close()
        await catalog.close()
        return sid

    sid = asyncio.run(scenario())
    assert sorted(tips) == ["edit-A", "edit-B", "edit-C"]
    cli = ["--home", str(home), "--storage", "sqlite"]
    assert main([*cli, "files", sid]) == 0
    listed = capsys.readouterr().out
    assert listed.count("(made in a run's own worktree)") == 6  # notes.txt and draft.txt, three branches each
    for word in ("edit-B", "edit-A"):
        code = main([*cli, "restore", sid, "--to", tips[word], "--yes"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert (repo / "notes.txt").read_text() == f"{word}\n"
        assert (repo / "draft.txt").read_text() == f"mine {word}\n"
    assert main([*cli, "restore", sid, "--undo"]) == 0
    assert (repo / "notes.txt").read_text() == "edit-B\n" and (repo / "draft.txt").read_text() == "mine edit-B\n"
    assert (repo / "readme.txt").read_text() == "r1\n"


async def test_a_second_file_changing_run_outside_git_is_refused_and_a_read_only_one_goes(catalog,
                                                                                          tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    home = tmp_path / "home"
    async with FakeProvider() as fake:
        replies = Replies(fake)
        chat = new_chat(catalog, fake, home, work, FILE_TOOLS)
        await chat.open(await catalog.create(cwd=str(work)))
        a1 = await seed(chat)
        assert await chat.send("hold on") == "sent"
        await wait_for(lambda: len(fake.requests) == 1, "r1's request")
        await chat.move_to(a1)
        entries = len(await chat.session.storage.get_entries())
        with pytest.raises(ChatError) as refused:
            await chat.send("edit-A please")
        assert "not a git repository" in str(refused.value) and "nothing was sent" in str(refused.value)
        assert "\n" not in str(refused.value)
        assert len(await chat.session.storage.get_entries()) == entries and len(fake.requests) == 1
        assert not (work / "notes.txt").exists()
        await chat.set_tools(["read", "ls"])  # a read-only run may go beside it
        assert await chat.send("hold too") == "sent"
        await wait_for(lambda: len(fake.requests) == 2, "the read-only run's request")
        replies.gate.set()
        await chat.wait_idle()
        await chat.close()


def test_a_worktree_left_by_a_killed_process_is_removed_at_the_next_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work")
    home = tmp_path / "home"
    home.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom treechat.workspace.worktrees import make_worktree\n"
         f"t = make_worktree({str(home)!r}, 'S1', 'r2', {str(repo)!r})\nprint(t.path, flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    made = Path(child.stdout.readline().strip())
    assert (made / "draft.txt").read_text() == "mine\n" and (made / "readme.txt").read_text() == "r1\n"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert made.exists()
    mine = make_worktree(home, "S2", "r3", str(repo))  # a live process's: kept
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")

    async def start() -> list[str]:
        catalog = await open_catalog("sqlite", home)
        async with FakeProvider() as fake:
            chat = new_chat(catalog, fake, home, repo, FILE_TOOLS)
            await chat.open(await catalog.create(cwd=str(repo)))
            swept = await chat._workspace.swept()
            await chat.close()
        await catalog.close()
        return swept

    assert asyncio.run(start()) == [str(made)]
    assert not made.exists() and not (home / "worktrees" / "S1").exists()
    assert Path(mine.path).exists() and outside.read_text() == "keep\n"
    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(made) not in listed and mine.path in listed
    remove_worktree(mine)
    assert worktrees_left(home) == [] and git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_one_prompt_to_three_models_edits_in_three_worktrees_and_any_reply_comes_in(catalog,
                                                                                        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work")
    home = tmp_path / "home"
    async with FakeProvider() as fake:
        def answer(request: Any) -> list[Any] | None:
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            if not messages:
                return None
            if messages[-1].get("role") == "tool":
                return fake.sse_steps([sse_frame(c) for c in openai_chunks(["done"])])
            model = request.body["model"]
            calls = [{"id": "c1", "name": "write", "arguments": json.dumps({"path": "notes.txt",
                                                                             "content": f"{model}\n"})}]
            return fake.sse_steps([sse_frame(c) for c in openai_chunks(tool_calls=calls)])

        fake.responder = answer
        chat = new_chat(catalog, fake, home, repo, FILE_TOOLS)
        asked: list[bool] = []

        async def approve(change: Any) -> bool:
            asked.append(change.worktree)  # the question says where the change is made
            return True

        chat.approve_change = approve
        await chat.open(await catalog.create(cwd=str(repo)))
        await seed(chat)
        comparison = await chat.compare("write it", ["openai/m1", "openai/m2", "openai/m3"])
        replies = await comparison.replies()
        assert [r.error for r in replies] == [None, None, None] and asked == [True, True, True]
        assert (repo / "notes.txt").read_text() == "base\n" and worktrees_left(home) == []
        (repo / "notes.txt").write_text("mine\n")  # changed by the person since the runs began: never overwritten
        plan = await chat.restore_plan(replies[0].tip)
        assert [s.shown for s in plan.blocked] == ["notes.txt"] and not plan.ready
        assert (await chat.restore(plan)).changed == 0 and (repo / "notes.txt").read_text() == "mine\n"
        (repo / "notes.txt").write_text("base\n")
        for reply in reversed(replies):
            assert reply.tip is not None
            await chat.move_to(reply.tip)  # picking it: its file offered, then restored
            plan = await chat.restore_plan(reply.tip)
            assert [s.shown for s in plan.ready] == ["notes.txt"]
            await chat.restore(plan)
            assert (repo / "notes.txt").read_text() == f"{reply.model.split('/')[1]}\n"
        await chat.undo_restore()
        assert (repo / "notes.txt").read_text() == "m2\n"
        await chat.close()


async def test_one_prompt_to_two_models_outside_git_changes_no_file_and_keeps_the_tools(catalog,
                                                                                      tmp_path: Path) -> None:
    """Outside git the compared runs would race in one folder: their edit, write and bash refuse
    (said once, and to the model), nothing is written; the branch records no narrower tool set."""
    work = tmp_path / "plain"
    work.mkdir()
    (work / "notes.txt").write_text("base\n")
    home = tmp_path / "home"
    home.mkdir()
    async with FakeProvider() as fake:
        def answer(request: Any) -> list[Any] | None:
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            if not messages:
                return None
            if messages[-1].get("role") == "tool":
                return fake.sse_steps([sse_frame(c) for c in openai_chunks([f"saw: {messages[-1]['content'][:9]}"])])
            calls = [{"id": "c1", "name": "write", "arguments": json.dumps({"path": "notes.txt",
                                                                             "content": request.body["model"]})}]
            return fake.sse_steps([sse_frame(c) for c in openai_chunks(tool_calls=calls)])

        fake.responder = answer
        chat = new_chat(catalog, fake, home, work, FILE_TOOLS)
        notes: list[str] = []
        chat.subscribe(lambda e: notes.append(e.text) if isinstance(e, Notice) else None)
        await chat.open(await catalog.create(cwd=str(work)))
        await seed(chat)
        comparison = await chat.compare("write it", ["openai/m1", "openai/m2"])
        replies = await comparison.replies()
        assert [r.error for r in replies] == [None, None]
        assert [message_text(r.reply) for r in replies if r.reply] == ["saw: Refused: ", "saw: Refused: "]
        assert (work / "notes.txt").read_text() == "base\n" and worktrees_left(home) == []
        assert any("not a git repository" in n and "refuse" in n for n in notes)
        for request in fake.requests:
            assert {"edit", "write", "bash"} <= {t["function"]["name"] for t in request.body.get("tools", [])}
        reply = replies[0]
        assert reply.tip is not None
        await chat.move_to(reply.tip)  # picked: the next message there carries every tool and may change files
        fake.responder = None
        fake.script_openai(["ok"])
        await chat.prompt("and now")
        assert {"edit", "write", "bash"} <= {t["function"]["name"] for t in fake.requests[-1].body.get("tools", [])}
        await chat.close()
