"""widgets/textual_internals.py is written for one Textual: the pin in pyproject.toml,
``textual>=8.2.8,<8.3``. After moving the pin, run this first: it names every private name the
module relies on that the new Textual lacks (then each entry there says what it does and what
public API would replace it)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from treechat.widgets import textual_internals

ROOT = Path(__file__).resolve().parents[2]


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def test_the_module_and_pyproject_pin_the_same_textual() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(d for d in dependencies if d.startswith("textual"))
    assert pin == "textual" + ",".join(textual_internals.PINNED), (pin, textual_internals.PINNED)


def test_the_running_textual_is_the_pinned_one() -> None:
    running = version("textual")
    low, high = (_release(bound) for bound in textual_internals.PINNED)
    assert low <= _release(running) < high, (
        f"Textual {running} is outside the pin {textual_internals.PINNED}: widgets/textual_internals.py "
        "overrides and reads private names of 8.2; check each of them against this release")


def test_every_private_name_the_module_relies_on_is_there() -> None:
    missing = textual_internals.missing_private_names()
    assert not missing, f"Textual {version('textual')} lacks what widgets/textual_internals.py relies on: {missing}"
