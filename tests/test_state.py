"""state.json: the recent models, newest first, written atomically, never an error to read."""

from __future__ import annotations

import json
import stat

from treechat.config.state import RECENT_MODELS, StateFile


def test_recent_models_newest_first_without_repeats_and_bounded(tmp_path):
    state = StateFile(tmp_path)
    assert state.recent_models() == []
    for i in range(RECENT_MODELS + 3):
        assert state.remember_model(f"p/m{i}")
    state.remember_model("p/m5")
    recent = state.recent_models()
    assert recent[0] == "p/m5" and len(recent) == RECENT_MODELS and len(set(recent)) == RECENT_MODELS
    assert stat.S_IMODE((tmp_path / "state.json").stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary file left


def test_keys_it_does_not_know_are_kept(tmp_path):
    (tmp_path / "state.json").write_text(json.dumps({"future": {"x": 1}, "recent_models": ["a/b"]}))
    StateFile(tmp_path).remember_model("c/d")
    data = json.loads((tmp_path / "state.json").read_text())
    assert data == {"future": {"x": 1}, "recent_models": ["c/d", "a/b"]}


def test_a_damaged_file_is_an_empty_state(tmp_path):
    for junk in ("{not json", "[1, 2]", json.dumps({"recent_models": "a/b"}), json.dumps({"recent_models": [1, "x", "a/b"]})):
        (tmp_path / "state.json").write_text(junk)
        assert StateFile(tmp_path).recent_models() in ([], ["a/b"])
    (tmp_path / "state.json").write_text("{not json")
    assert StateFile(tmp_path).remember_model("a/b")
    assert StateFile(tmp_path).recent_models() == ["a/b"]


def test_an_unwritable_home_is_false_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert StateFile(blocker / "home").remember_model("a/b") is False
