"""The documentation stays true: the generated tables are current, every config example parses, every
config key is documented, every relative link resolves, the picture is what the app draws, and CI runs
the README's commands as a new user types them."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

from treechat.docs import KEYS_PAGE, PAGES, README, render
from treechat.tui import TreechatApp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """Every page a reader follows links through."""
    return [README, ROOT / "bench" / "README.md", *sorted(DOCS.glob("*.md"))]


def test_generated_sections_are_current():
    for page, sections in PAGES.items():
        text = page.read_text(encoding="utf-8")
        for name in sections:
            assert f"<!-- {name}:start -->" in text and f"<!-- {name}:end -->" in text, (page, name)
        assert render(text) == text, f"{page.relative_to(ROOT)} is out of date: run `python -m treechat.docs`"


def test_every_slash_command_is_documented_with_its_help():
    text = KEYS_PAGE.read_text(encoding="utf-8")
    rows = TreechatApp.command_table()
    assert len(rows) == 23 and len({r.name for r in rows}) == len(rows)
    for row in rows:
        assert f"`/{row.name}" in text and row.help.replace("|", "\\|") in text, row.name


def test_every_toml_block_in_the_docs_is_a_valid_config():
    """The config examples use the code's keys (they once silently did not)."""
    from treechat.config.settings import parse_config

    found = 0
    for page in pages():
        for block in re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            parse_config(block, page.name)
            found += 1
    assert found >= 7, "the docs show fewer config examples than they did"


def test_every_config_key_is_in_the_configuration_page():
    from treechat.config.settings import CompactionConfig, ConfigFile, ModelOptions, ProviderConfig
    from treechat.mcp.config import McpServerConfig

    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [f"{model.__name__}.{key}"
               for model in (ConfigFile, ProviderConfig, ModelOptions, CompactionConfig, McpServerConfig)
               for key in model.model_fields
               if f"`{key}`" not in text and f"`[{key}]`" not in text and f"`[{key}.NAME]`" not in text]
    assert not missing, f"docs/configuration.md does not say what these keys do: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_every_relative_link_in_the_docs_resolves():
    """README, bench/README.md and docs/: a link to a file names one that exists, and a link to a
    heading (#…) names one the page has."""
    broken = []
    for page in pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_nothing_cites_a_document_the_repository_does_not_hold():
    """The first design and the research notes stayed outside the repository: code and docs say
    what they mean instead of citing their sections."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    cited = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or path.suffix not in (".py", ".md", ".tcss", ".toml") or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"DESIGN(\.md)? ?§|pi-behaviour|textual-peers|Pi §", line):
                cited.append(f"{name}:{number}: {line.strip()}")
    assert not cited, "\n".join(cited)


def test_the_readme_shows_the_product_first():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(text.encode()) < 25_000, "README.md is a guide: details go to docs/"
    assert "## The tree" in lines[:150]
    assert "](docs/screenshot.svg)" in "\n".join(lines[:20])


@pytest.mark.slow  # the real App
async def test_the_readme_picture_is_what_the_app_draws():
    """docs/screenshot.svg is the real app after a scripted conversation (tests/screenshot.py)."""
    from tests.screenshot import PICTURE, draw

    assert await draw() == PICTURE.read_text(encoding="utf-8"), (
        "docs/screenshot.svg is not what the app draws now: run `.venv/bin/python -m tests.screenshot` "
        "and look at the picture")


def test_ci_runs_the_readmes_two_commands_as_a_new_user_types_them():
    """README's install-and-test command is what .ci/run runs, verbatim; and the install-and-start
    command installs the same way (issue 38: one install in CI)."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", text[:3000], re.S)
    start, test = blocks[0].strip(), blocks[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), "the README's test command must be in .ci/run as it is"
    assert start.startswith("python3 -m venv .venv && .venv/bin/pip install -q -e .") and "treechat" in start
    assert ci.count("pip install") == 1, "CI installs once"
