"""The README's picture (docs/screenshot.svg): the real App, drawn by Textual's own SVG export,
after a short branched conversation with the loopback fake provider and the tree panel open.

    .venv/bin/python -m tests.screenshot          # rewrites docs/screenshot.svg

tests/test_docs.py draws it again and fails when the committed picture is not what the app draws
now, so the picture stays true."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from tests.fake_provider import FakeProvider

PICTURE = Path(__file__).resolve().parents[1] / "docs" / "screenshot.svg"
SIZE = (120, 34)
USAGE = {"prompt_tokens": 1480, "completion_tokens": 212, "total_tokens": 1692}

QUESTION = "parse_date('2024-02-30') returns March 1st. Why?"
ANSWER = ("`datetime(2024, 2, 30)` would raise, so the overflow comes from your own arithmetic: "
          "`parse_date` adds the day as a `timedelta` to the first of the month, and 30 days after "
          "February 1st is March 2nd, minus one: **March 1st**.\n\n"
          "Two ways out: refuse such a date, or clamp it to the month's last day.")
REFUSE = "Refuse it: raise ValueError naming the date."
REFUSED = ("Let `date()` check the day against the month:\n\n```python\ndef parse_date(text: str) -> date:\n    year, month, day = map(int, text.split(\"-\"))\n"
           "    return date(year, month, day)  # ValueError: day is out of range for month\n```")
CLAMP = "Clamp it to the last day of the month instead."
CLAMPED = ("Clamp the day with `calendar.monthrange`:\n\n```python\nfrom calendar import monthrange\n\ndef parse_date(text: str) -> date:\n"
           "    year, month, day = map(int, text.split(\"-\"))\n"
           "    return date(year, month, min(day, monthrange(year, month)[1]))\n```\n\n"
           "`parse_date('2024-02-30')` is now February 29th (2024 is a leap year).")
TESTS = "Add a test for the leap year."
TESTED = ("Both leap and common years:\n\n```python\ndef test_february_30th_is_the_last_day():\n"
          "    assert parse_date(\"2024-02-30\") == date(2024, 2, 29)\n"
          "    assert parse_date(\"2023-02-30\") == date(2023, 2, 28)\n```")


async def draw() -> str:
    """The picture as SVG text (the same every run: no time, id or path of this run is on screen)."""
    from treechat.chat import Chat
    from treechat.config.settings import load_settings
    from treechat.llm.registry import ModelRegistry
    from treechat.storage import open_catalog
    from treechat.tui import TreechatApp
    from treechat.widgets.composer.view import Composer
    from treechat.widgets.tree.view import TreeView

    async with FakeProvider() as fake:
        for reply in (ANSWER, REFUSED, CLAMPED, TESTED):
            fake.script_openai([reply], usage=USAGE)
        with tempfile.TemporaryDirectory() as home:
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-screenshot"}
            settings = load_settings(Path(home), env=env)
            catalog = await open_catalog("sqlite", Path(home))
            storage = await catalog.create(cwd=home)
            chat = Chat(catalog=catalog, settings=settings, registry=ModelRegistry(settings, env=env),
                        model_ref="openai/gpt-4.1-mini", cwd=home)  # config.toml's tools: all six
            app = TreechatApp(chat, storage, detect_servers=False)
            try:
                async with app.run_test(size=SIZE) as pilot:

                    async def settle(requests: int) -> None:
                        for _ in range(1000):
                            if len(fake.requests) >= requests and chat.agent is not None and not chat.is_running:
                                break
                            await pilot.pause(0.01)
                        else:
                            raise RuntimeError("the fake provider's reply never came")
                        await pilot.pause()

                    async def send(text: str, requests: int) -> None:
                        composer = app.query_one(Composer)
                        composer.focus()
                        composer.clear()
                        composer.insert(text)
                        await pilot.press("enter")
                        await settle(requests)

                    await chat.rename("parse_date and February 30th")
                    await send(QUESTION, 1)
                    await send(REFUSE, 2)
                    branch = await chat.session.get_branch()
                    refuse_prompt, refused = branch[-2].id, branch[-1].id
                    await chat.label(refused, "raise")
                    await chat.choose(refuse_prompt)  # the tree's Enter on a prompt: edit and resend
                    await pilot.pause()
                    await send(CLAMP, 3)
                    await send(TESTS, 4)
                    tree = app.query_one(TreeView)
                    tree.focus()  # the footer shows the tree's keys
                    tree.move_cursor_to(refuse_prompt)
                    await pilot.pause()
                    return app.export_screenshot(title="treechat")
            finally:
                await chat.close()
                await catalog.close()
    raise AssertionError("unreachable")


def main() -> int:
    os.environ.setdefault("TZ", "UTC")
    svg = asyncio.run(draw())
    PICTURE.write_text(svg, encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(Path.cwd()) if PICTURE.is_relative_to(Path.cwd()) else PICTURE}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
