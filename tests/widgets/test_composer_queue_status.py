from treechat.widgets.chrome.banner import Banner
from treechat.widgets.chrome.session_header import SessionHeader
from treechat.widgets.chrome.status_bar import StatusBar
from treechat.widgets.composer.queue_tray import QueueTray
from treechat.widgets.composer.view import Composer, parse_command

from .helpers import Host, screen_text


def test_parse_command():
    assert parse_command("/name my session ") == ("name", "my session")
    assert parse_command("  /TREE") == ("tree", "")
    assert parse_command("/usr/bin/env is a path") is None
    assert parse_command("//tree") is None
    assert parse_command("hello /tree") is None


async def test_enter_takes_the_message_and_a_refused_one_comes_back():
    composer = Composer()
    app = Host(composer)
    async with app.run() as pilot:
        composer.focus()
        await pilot.press(*"hello", "enter")
        await pilot.pause()
        assert [(m.text, m.kind) for m in app.posted(Composer.Submitted)] == [("hello", "send")]
        assert composer.text == "" and composer.sent_history == ["hello"]  # what is typed next is a new message
        await pilot.press("enter")  # empty: nothing
        await pilot.pause()
        assert len(app.posted(Composer.Submitted)) == 1
        await pilot.press(*"more")
        composer.give_back("hello")  # the App could not send it: back, before what was typed since
        assert composer.text == "hello\nmore"


async def test_newline_keys_and_running_kinds():
    composer = Composer()
    app = Host(composer)
    async with app.run() as pilot:
        composer.focus()
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert composer.text == "a\nb\nc"
        composer.running = True
        await pilot.press("enter", "x", "alt+enter", "y", "tab")
        await pilot.pause()
        assert [(m.text, m.kind) for m in app.posted(Composer.Submitted)] == [
            ("a\nb\nc", "steer"), ("x", "follow_up"), ("y", "follow_up")]
        composer.running = False  # Alt+Enter asks for a follow-up anyway: the controller sends it when idle
        await pilot.press("z", "alt+enter", "w", "enter")
        await pilot.pause()
        assert [(m.text, m.kind) for m in app.posted(Composer.Submitted)][-2:] == [("z", "follow_up"), ("w", "send")]


async def test_tab_moves_focus_when_idle():
    composer, tray = Composer(), QueueTray()
    app = Host(composer, tray)
    async with app.run() as pilot:
        tray.set_items([("steer", "x")])
        composer.focus()
        await pilot.press("x", "tab")
        await pilot.pause()
        assert not app.posted(Composer.Submitted)
        assert app.focused is tray


async def test_slash_commands_post_command():
    composer = Composer()
    app = Host(composer)
    async with app.run() as pilot:
        composer.focus()
        await pilot.press(*"/label plan b", "enter")
        await pilot.pause()
        assert [(m.name, m.args, m.text) for m in app.posted(Composer.Command)] == [("label", "plan b", "/label plan b")]
        await pilot.press(*"//tree", "enter")
        await pilot.pause()
        assert app.posted(Composer.Submitted)[-1].text == "/tree"


async def test_up_recalls_history_only_when_empty():
    composer = Composer()
    app = Host(composer)
    async with app.run() as pilot:
        composer.set_history(["first", "second"])
        composer.focus()
        await pilot.press("up")
        assert composer.text == "second"
        await pilot.press("up")
        assert composer.text == "first"
        await pilot.press("down")
        assert composer.text == "second"
        await pilot.press("down")
        assert composer.text == ""
        composer.set_text("line1\nline2")
        await pilot.press("up")
        assert composer.text == "line1\nline2"  # not empty: Up moves the cursor


async def test_set_text_stashes_the_draft():
    composer = Composer()
    app = Host(composer)
    async with app.run():
        composer.load_text("my draft")
        composer.set_text("old question")
        assert composer.text == "old question" and composer.stashed_draft == "my draft"
        composer.restore_draft()
        assert composer.text == "my draft"


async def test_queue_tray_shows_items_and_posts():
    tray = QueueTray()
    app = Host(tray)
    async with app.run() as pilot:
        assert not tray.display or tray.region.height == 0
        tray.set_items([("steer", "fix the test first"), ("follow_up", "then the changelog")])
        await pilot.pause()
        text = screen_text(app)
        assert "⚡ steer" in text and "⏭ later" in text and "changelog" in text
        tray.focus()
        await pilot.press("down", "x", "alt+up")
        await pilot.pause()
        assert [m.index for m in app.posted(QueueTray.Dropped)] == [1]
        assert app.posted(QueueTray.PullLast)
        await pilot.click(QueueTray, offset=(tray.content_region.width, 0))
        await pilot.pause()
        assert [m.index for m in app.posted(QueueTray.Dropped)] == [1, 0]
        tray.set_items([])
        await pilot.pause()
        assert "steer" not in screen_text(app)


async def test_status_bar_header_and_banner():
    status, header, banner = StatusBar(), SessionHeader(), Banner("No API key: set OPENAI_API_KEY")
    app = Host(header, banner, status)
    async with app.run(size=(120, 10)) as pilot:
        status.update_status(model="openai/gpt-4o", thinking="high", tokens_in=84_000, tokens_out=12_000,
                             cost=0.41, context_percent=42, context_estimated=True, queued_steer=1, queued_follow_up=2)
        header.set_session("refactor-auth", "branch 2/3")
        await pilot.pause()
        text = screen_text(app)
        for needle in ["openai/gpt-4o • high", "↑84.0k ↓12.0k", "$0.41", "ctx ~42%", "⚡1 ⏭2", "refactor-auth", "branch 2/3", "OPENAI_API_KEY"]:
            assert needle in text, needle
        status.update_status(model_warning=True, context_percent=95, context_estimated=False)
        await pilot.pause()
        assert "gpt-4o ⚠" in screen_text(app) and "ctx 95%" in screen_text(app)
        await pilot.click(Banner, offset=(banner.content_region.width, 0))
        await pilot.pause()
        assert app.posted(Banner.Dismissed) and "OPENAI_API_KEY" not in screen_text(app)


async def test_a_long_model_id_gives_way_to_the_context_figure_at_any_width():
    """A local server's model id is a file name (llama-cpp-python: 40 characters here); at 80
    columns the bar ran off the end and the context figure, what a 2k-token model needs most,
    was not shown."""
    model = "llamacpp/SmolLM2-135M-Instruct.Q4_1.gguf"
    for width, whole in ((160, True), (80, False), (64, False)):
        bar = StatusBar()
        app = Host(bar)
        async with app.run(size=(width, 3)) as pilot:
            bar.update_status(model=model, thinking="off", tokens_reported=False, cost=0.0, context_percent=62,
                              context_estimated=True, model_warning=True, queued_steer=1,
                              tools=("read", "ls", "grep", "bash", "edit", "write"))
            await pilot.pause()
            line = next((ln.rstrip() for ln in screen_text(app).splitlines() if "llamacpp" in ln), "")
            ends = ("ctx ~62%  │  6 tools  │  ⚡1 ⏭0", "ctx ~62% │ 6 tools │ ⚡1 ⏭0") if width >= 80 else (
                "ctx ~62% │ ⚡1 ⏭0",)  # narrower than 80: the tools' count gives way first
            assert line.endswith(ends), (width, line)
            assert "llamacpp/" in line and "⚠" in line and "↑? ↓?" in line, (width, line)
            assert (model in line) is whole and ("…" in line) is not whole, (width, line)


async def test_header_shows_the_whole_way_back_when_viewing_at_any_width():
    """Viewing another branch, "Esc returns" is never cut off: a long name and position give
    up their room first (at 160 columns the hint ended in "· g:")."""
    for width in (160, 80):
        header = SessionHeader()
        app = Host(header)
        async with app.run(size=(width, 3)) as pilot:
            header.set_session("What is the difference between a process and a thread in Linux really",
                               "14 entries on this branch · 3 branches", viewing="“What is the difference between…”")
            await pilot.pause()
            line = screen_text(app).splitlines()[0]
            assert "viewing “What is the difference between…” · Esc returns" in line, (width, line)
            assert line.strip().startswith("What is"), line


async def test_status_bar_counts_a_wait_down_and_ends_it():
    bar = StatusBar()
    app = Host(bar)
    async with app.run(size=(120, 3)) as pilot:
        bar.wait(3, "server overloaded")
        await pilot.pause()
        assert "retrying in 3 s: server overloaded" in str(bar.render())
        bar.wait(0)
        await pilot.pause()
        assert "retrying" not in str(bar.render())
