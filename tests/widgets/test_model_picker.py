"""The model picker on its own: groups with their reason once, disabled rows, the current model,
a typed ref that is not listed, an error from the chooser; the thinking picker's levels."""

from __future__ import annotations

from textual.widgets import Input, OptionList

from treechat.widgets.screens import ModelChoice, ModelGroup, ModelPicker, ThinkingPicker

from .helpers import Host, screen_text, wait_for

GROUPS = [
    ModelGroup("Recent", (ModelChoice("ollama/qwen3:32b", "local"), ModelChoice("anthropic/claude-x", "no key", disabled=True))),
    ModelGroup("openai", (ModelChoice("openai/gpt-4.1", "1M ctx · images"), ModelChoice("openai/gpt-4.1-mini", "1M ctx · images"),
                          ModelChoice("openai/gpt-5-mini", "400k ctx · thinks · images"))),
    ModelGroup("anthropic", (ModelChoice("anthropic/claude-sonnet-4-5", "200k ctx · thinks"),
                             ModelChoice("anthropic/claude-haiku-4-5", "200k ctx · thinks")),
               problem="no key: set ANTHROPIC_API_KEY"),
]


def highlighted_text(app) -> str:
    options = app.screen.query_one("#models", OptionList)
    assert options.highlighted is not None
    return options.get_option_at_index(options.highlighted).prompt.plain


async def test_the_reason_is_said_once_per_provider_and_its_rows_cannot_be_chosen():
    app = Host()
    results: list = []
    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS, current="openai/gpt-4.1-mini"), results.append)
        await pilot.pause()
        text = screen_text(app)
        assert text.count("ANTHROPIC_API_KEY") == 1
        assert "● openai/gpt-4.1-mini" in text  # the current model, marked
        assert "openai/gpt-4.1-mini" in highlighted_text(app)  # and where Enter starts
        lines = text.splitlines()
        assert lines.index(next(ln for ln in lines if "Recent" in ln)) < lines.index(next(ln for ln in lines if " openai " in f" {ln.strip()} "))
        options = app.screen.query_one("#models", OptionList)
        disabled = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
                    if options.get_option_at_index(i).disabled]
        assert any("claude-sonnet-4-5" in d for d in disabled) and any("claude-x" in d for d in disabled)
        await pilot.press(*"sonnet", "enter")
        await pilot.pause()
        assert results == [] and isinstance(app.screen, ModelPicker)  # nothing enabled matches: nothing chosen
        assert "No model matches 'sonnet'" in screen_text(app)
        for typed in ("anthropic/claude-sonnet-4-5", "anthropic/not-listed"):  # listed or not: the reason, said
            app.screen.query_one("#filter", Input).value = typed
            await pilot.press("enter")
            await pilot.pause()
            assert results == [] and "anthropic: no key: set ANTHROPIC_API_KEY" in screen_text(app), typed
        await pilot.press("escape")
        await pilot.pause()
        assert results == [None]


async def test_every_model_is_one_line_even_when_narrow():
    app = Host()
    async with app.run(size=(60, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS))
        await pilot.pause()
        text = screen_text(app)
        lines = text.splitlines()
        first = next(i for i, ln in enumerate(lines) if "Recent" in ln)
        last = next(i for i, ln in enumerate(lines) if "Enter chooses" in ln)
        inner = [ln for ln in lines[first:last] if ln.replace("│", "").strip()]
        assert len(inner) == len(GROUPS) + sum(len(g.models) for g in GROUPS), inner  # no row wrapped
        assert "openai/gpt-5-mini" in next(ln for ln in inner if "400k" in ln)


async def test_a_typed_ref_that_is_not_listed_is_offered_and_chosen():
    app = Host()
    results: list = []
    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS), results.append)
        await pilot.pause()
        await pilot.press(*"openai/gpt-4.1")
        await pilot.pause()
        assert "use openai/gpt-4.1 (not in the list)" not in screen_text(app)  # it is listed: no extra row
        assert highlighted_text(app).strip().startswith("openai/gpt-4.1")
        await pilot.press(*"-nano")
        await pilot.pause()
        assert "↵ use openai/gpt-4.1-nano (not in the list)" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert results == ["openai/gpt-4.1-nano"]


async def test_a_partial_ref_still_picks_the_listed_model_first():
    app = Host()
    results: list = []
    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS), results.append)
        await pilot.pause()
        await pilot.press(*"openai/gpt-5", "enter")
        await pilot.pause()
        assert results == ["openai/gpt-5-mini"]  # the typed row is one Up away


async def test_a_refusal_is_shown_in_the_dialog_which_stays_open():
    app = Host()
    results: list = []
    asked: list[str] = []

    async def choose(ref: str) -> str | None:
        asked.append(ref)
        return None if ref.startswith("openai/") else f"Unknown provider {ref.split('/')[0]!r}."

    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS, choose=choose), results.append)
        await pilot.pause()
        await pilot.press(*"nosuch/model", "enter")
        assert await wait_for(pilot, lambda: "Unknown provider 'nosuch'." in screen_text(app))
        assert results == [] and isinstance(app.screen, ModelPicker)
        await pilot.press("ctrl+u")  # editing the filter clears the error
        await pilot.pause()
        assert "Unknown provider" not in screen_text(app)
        await pilot.press(*"openai/my-finetune", "enter")
        assert await wait_for(pilot, lambda: results == ["openai/my-finetune"])
        assert asked == ["nosuch/model", "openai/my-finetune"]


async def test_the_thinking_picker_offers_only_the_levels_given():
    app = Host()
    results: list = []
    async with app.run(size=(80, 24)) as pilot:
        app.push_screen(ThinkingPicker("off", ("off",), "openai/gpt-4.1 does not think: only off."), results.append)
        await pilot.pause()
        text = screen_text(app)
        assert "● off" in text and "minimal" not in text and "does not think" in text
        await pilot.press("enter")
        await pilot.pause()
        app.push_screen(ThinkingPicker("high", ("off", "minimal", "low", "medium", "high")), results.append)
        await pilot.pause()
        assert "xhigh" not in screen_text(app) and "● high" in screen_text(app)
        await pilot.press("up", "enter")
        await pilot.pause()
        assert results == ["off", "medium"]


async def test_a_typed_model_marked_for_a_comparison_shows_its_mark():
    app = Host()
    sent: list[list[str]] = []

    async def compare(refs: list[str]) -> str | None:
        sent.append(refs)
        return None

    async with app.run(size=(100, 30)) as pilot:
        app.push_screen(ModelPicker(GROUPS, current="openai/gpt-4.1-mini", compare=compare))
        await pilot.pause()
        app.screen.query_one("#filter", Input).value = "openai/not-listed"
        await pilot.pause()
        assert "use openai/not-listed" in highlighted_text(app)
        await pilot.press("space")
        await pilot.pause()
        assert highlighted_text(app).startswith("✓ ") and "1 marked" in screen_text(app)
        await pilot.press("space")  # unmarked
        await pilot.pause()
        assert not highlighted_text(app).startswith("✓ ") and "marked" not in screen_text(app).split("·")[0]
