"""The inner loop (`pytest -m "not slow"`) leaves out what tests/conftest.py calls slow: every file it
names exists (a renamed file would silently join the inner loop), and the marks land where meant."""

from __future__ import annotations

import pytest

from tests.conftest import FAST, SLOW, TESTS, slow_by_file


def test_every_file_named_slow_or_fast_exists():
    missing = [name for name in [*SLOW, *FAST] if not (TESTS / name).exists()]
    assert not missing, f"tests/conftest.py names files that are not there: {missing}"


def test_the_app_is_slow_but_its_smoke_and_the_units_stay_in_the_inner_loop():
    assert slow_by_file("tui/test_chat.py") and slow_by_file("packaging/test_wheel.py")
    assert not slow_by_file("tui/test_command_registry.py") and not slow_by_file("storage/test_conformance.py")


def test_a_test_on_postgresql_is_marked_slow(request: pytest.FixtureRequest, catalog) -> None:
    assert (request.node.get_closest_marker("slow") is not None) == (catalog.kind == "postgres")
