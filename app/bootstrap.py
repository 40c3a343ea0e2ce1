"""Start-up, in one place for the CLI, the TUI and print mode: settings and the model registry,
the store, and which session to open.

Nothing here exits: problems are raised as `ConfigError`, `ModelRefError` (a bad `[providers]`
table) or `StorageError`, each one sentence the CLI shows on one line. The only output is a
transient progress line on a terminal when opening the store takes over a second (the first open
after an upgrade migrates the database, which can rebuild tables of a large one).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from treechat.progress import progress
from treechat.storage import BACKENDS, open_catalog
from treechat.storage.base import SessionCatalog, SessionStorage, StorageError

if TYPE_CHECKING:  # the storage commands start without the config's and providers' models: see load_environment
    from treechat.config.settings import Settings
    from treechat.llm.registry import ModelRegistry

__all__ = ["BACKENDS", "Environment", "load_environment", "storage_settings", "apply_lock_timeout", "storage_kind",
           "store_url", "open_store", "pick_session", "latest_with_content"]


@dataclass
class Environment:
    settings: Settings
    registry: ModelRegistry


def load_environment(home: str | os.PathLike[str] | None = None) -> Environment:
    """config.toml (strict) and the providers it and the environment define."""
    from treechat.config.settings import load_settings
    from treechat.llm.registry import ModelRegistry
    from treechat.storage.locks import set_lock_timeout

    settings = load_settings(home)
    set_lock_timeout(settings.lock_timeout)
    return Environment(settings, ModelRegistry(settings))


def _no_config_file(home: str | os.PathLike[str] | None) -> bool:
    """Nothing at config.toml's place (load_settings then gives the defaults); anything there, a
    FIFO or a broken link included, is for load_settings to read or refuse."""
    from treechat.config.paths import config_path

    return not os.path.lexists(config_path(home))


def storage_settings(home: str | os.PathLike[str] | None = None) -> Settings | None:
    """config.toml's settings for a storage command, or None when there is no config file: what
    such a command reads of them (storage, database_url, lock_timeout) then has its default, and it
    starts without pydantic, which config/settings.py needs to define and validate the file's schema
    (~40 ms of a streamed `treechat import`)."""
    if _no_config_file(home):
        return None
    from treechat.config.settings import load_settings

    return load_settings(home)


def apply_lock_timeout(home: str | os.PathLike[str] | None = None, settings: Settings | None = None) -> None:
    """config.toml's `lock_timeout` (from `settings` when the command read them) for a command
    that needs nothing else of the config (import, reindex, sessions…): a config that does not
    parse leaves the default (the commands that need it say what is wrong with it)."""
    from treechat.storage.locks import LOCK_TIMEOUT, set_lock_timeout

    if settings is None and _no_config_file(home):
        set_lock_timeout(LOCK_TIMEOUT)  # the default Settings would hold, without loading them
        return
    from treechat.config.settings import ConfigError, load_settings

    try:
        set_lock_timeout((settings or load_settings(home)).lock_timeout)
    except ConfigError:
        pass


def storage_kind(choice: str | None = None, *, ephemeral: bool = False, settings: Settings | None = None) -> str:
    """`--storage`, else `storage` in config.toml, else SQLite; `--ephemeral` keeps nothing."""
    configured = settings.storage if settings is not None else None
    return "memory" if ephemeral else (choice or configured or "sqlite")


def store_url(settings: Settings | None) -> str | None:
    """The PostgreSQL server: TREECHAT_DATABASE_URL, else `database_url` in config.toml."""
    from treechat.storage.postgres.url import database_url

    return database_url(settings.database_url if settings is not None else None,
                        settings.env if settings is not None else None)


SLOW_OPEN_S = 1.0


async def open_store(kind: str, home: Path, *, settings: Settings | None = None,
                     show_progress: bool = True) -> SessionCatalog:
    """`show_progress` False: no line on stderr when the open is slow (the app, which owns the
    terminal, says it in its own way)."""
    opening = asyncio.ensure_future(open_catalog(kind, home, database_url=store_url(settings)))
    try:
        done, _ = await asyncio.wait({opening}, timeout=SLOW_OPEN_S)
        if not done:
            what = {"sqlite": "Opening the database", "postgres": "Connecting to PostgreSQL"}.get(kind, "Opening the sessions")
            with progress(what, total=None, enabled=show_progress):
                return await asyncio.shield(opening)
        return opening.result()
    except asyncio.CancelledError:
        # Ctrl+C while opening: the open runs on the database's thread and cannot be stopped half-way;
        # let it end and close it, so that thread never reports to a loop that is gone (a traceback)
        try:
            catalog = await opening
        except BaseException:  # noqa: BLE001 - stopping anyway: what the open would have said is moot
            raise asyncio.CancelledError from None
        await catalog.close()
        raise


async def latest_with_content(catalog: SessionCatalog) -> SessionStorage | None:
    """`-c`: the newest session that holds something (an empty one left by a killed run is not
    "the last conversation"), or None."""
    rows = [r for r in await catalog.list() if r.entry_count > 0]
    return await catalog.open(rows[0].id) if rows else None


async def pick_session(catalog: SessionCatalog, *, session_ref: str | None = None, continue_latest: bool = False,
                       cwd: str | None = None, reuse_empty: bool = False) -> SessionStorage:
    """The session to open: `--session ID|PREFIX`, else `-c` (the latest with content, or a new
    one), else a new session. `reuse_empty`: an empty session a killed run left (the newest) is
    reused rather than adding another empty row (the app; print mode always starts afresh)."""
    cwd = cwd or os.getcwd()
    if session_ref:
        return await catalog.open(session_ref)
    read_only = catalog.read_only
    if isinstance(read_only, str) and read_only:  # nothing can be created: browse the latest
        latest = await latest_with_content(catalog)
        if latest is None:
            raise StorageError(f"Sessions are read-only here ({read_only}) and there are none to open; "
                               "use a writable home (--home DIR or TREECHAT_HOME).")
        return latest
    if continue_latest:
        return await latest_with_content(catalog) or await catalog.create(cwd=cwd)
    if reuse_empty:
        latest = await catalog.latest()
        if latest is not None and (await latest.get_session_stats()).entry_count == 0:
            return latest
    return await catalog.create(cwd=cwd)
