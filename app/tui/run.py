"""`treechat` with no subcommand: the full-screen app on the chosen store and session.

The first frame comes first (app/tui/startup/): this module imports only the App, and what
the session needs (config.toml checked, the store, the controller) is loaded by `start` once that
frame is on the screen. A problem found then (a config error, a store that cannot be opened) is
raised here after the terminal is given back, as the one line it always was. With nobody at a
terminal (stdin or stderr not one: a script, a test) the session opens first, as it used to, so
that such a problem is the only thing on stderr.

The cyclic garbage collector is off from the start until the session is open (the App turns it
back on): start-up makes ~10^5 objects that all stay (modules, classes, widgets), and the
collector walking them again and again cost 50-100 ms before the first frame.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import TYPE_CHECKING

from treechat.config.paths import config_path

from . import early_keys

if TYPE_CHECKING:
    from treechat.chat import Chat
    from treechat.storage.base import SessionCatalog, SessionStorage

    from .startup.feature import Report

CONFIG_READ_LIMIT = 1 << 20  # the theme's look-up reads at most this much of config.toml


def saved_theme(home: str | None) -> str | None:
    """config.toml's `theme`, for the first frame, read without checking the rest of the file
    (that is done right after, and says what is wrong with it); None when there is none."""
    path = config_path(home)
    try:
        if not path.is_file():  # none (the first start), or a FIFO or a device: never opened here
            return None
        with open(path, "rb") as file:
            text = file.read(CONFIG_READ_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except ValueError:  # not TOML: the full check, right after the first frame, says where
        return None
    theme = data.get("theme")
    return theme if isinstance(theme, str) else None


async def run_tui(args: argparse.Namespace) -> int:
    gc.disable()  # (see the module's doc) before Textual and the App are imported
    early_keys.take_keys_as_typed()  # what is typed from now on arrives as typed (early_keys.py)
    try:
        return await _run(args)
    finally:
        early_keys.restore()
        gc.enable()


async def _run(args: argparse.Namespace) -> int:
    from .app import TreechatApp

    catalogs: list[SessionCatalog] = []
    interactive = watched()

    async def start(report: Report) -> tuple[Chat, SessionStorage]:
        from treechat.bootstrap import load_environment, open_store, pick_session, storage_kind
        from treechat.chat import Chat

        env = load_environment(args.home)
        kind = storage_kind(args.storage, ephemeral=args.ephemeral, settings=env.settings)
        catalog = await open_store(kind, env.settings.home, settings=env.settings, show_progress=not interactive)
        catalogs.append(catalog)
        if hasattr(catalog, "on_read"):  # a first start on a big JSONL folder: seconds
            catalog.on_read = lambda done, total: report(f"Reading sessions: {done:,} of {total:,}…")
        try:
            storage = await pick_session(catalog, session_ref=args.session, continue_latest=args.continue_latest,
                                         cwd=os.getcwd(), reuse_empty=True)
        finally:
            if hasattr(catalog, "on_read"):
                catalog.on_read = None
        chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry, model_ref=args.model,
                    tools=args.tools.split(",") if args.tools else None)
        return chat, storage

    fresh = not (args.session or args.continue_latest)  # a new (or empty) session: the welcome shows at once
    try:
        if interactive:
            app = TreechatApp(start=start, theme=saved_theme(args.home), fresh=fresh)
            app.driver_class = early_keys.user_mode_driver(app.driver_class)
        else:  # nobody at a terminal (a script, a test): a problem is the one line on stderr, no screen before it
            app = TreechatApp(*await start(lambda text: None))
        await app.run_async()
        if app.start_error is not None:
            raise app.start_error
        chat = getattr(app, "chat", None)
        if chat is not None:
            await chat.close()  # after a crash or a signal too: stop a run, keep the draft, drop an empty session
    finally:
        for catalog in catalogs:
            await catalog.close()
    return app.return_code or 0


def watched() -> bool:
    """Someone is at a terminal: keys come from one and the screen (Textual writes it to stderr)
    goes to one. Only then is the first frame drawn before the session opens."""
    err = sys.__stderr__
    try:
        return sys.stdin.isatty() and err is not None and err.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
