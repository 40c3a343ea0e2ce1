"""`treechat` with no subcommand: the full-screen app on the chosen store and session."""

from __future__ import annotations

import argparse
import os

from treechat.bootstrap import load_environment, open_store, pick_session, storage_kind
from treechat.chat import Chat
from treechat.progress import reading_progress

from .app import TreechatApp


async def run_tui(args: argparse.Namespace) -> int:
    env = load_environment(args.home)
    kind = storage_kind(args.storage, ephemeral=args.ephemeral, settings=env.settings)
    catalog = await open_store(kind, env.settings.home, settings=env.settings)
    try:
        with reading_progress(catalog, "Reading sessions"):  # a first start on a big JSONL folder: seconds
            storage = await pick_session(catalog, session_ref=args.session, continue_latest=args.continue_latest,
                                         cwd=os.getcwd(), reuse_empty=True)
        chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry, model_ref=args.model,
                    tools=args.tools.split(",") if args.tools else None)
        app = TreechatApp(chat, storage)
        await app.run_async()
        await chat.close()  # after a crash or a signal too: stop a run, keep the draft, drop an empty session
    finally:
        await catalog.close()
    return app.return_code or 0
