"""Where treechat keeps its files: one home folder (`--home`, `TREECHAT_HOME`) or platformdirs."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def resolve_home(home: str | os.PathLike[str] | None = None, *, create: bool = True) -> Path:
    """The data folder (database, session files); created on demand, private to the user
    (`create=False`: only where it is, for `treechat doctor`, which changes nothing)."""
    chosen = home or os.environ.get("TREECHAT_HOME")
    path = Path(chosen).expanduser() if chosen else Path(platformdirs.user_data_dir("treechat"))
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def config_path(home: str | os.PathLike[str] | None = None) -> Path:
    """config.toml: inside the home folder when one was given, else the platform config dir."""
    chosen = home or os.environ.get("TREECHAT_HOME")
    if chosen:
        return Path(chosen).expanduser() / "config.toml"
    return Path(platformdirs.user_config_dir("treechat")) / "config.toml"
