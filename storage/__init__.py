"""Session storage. At the top, the vocabulary and the protocol: the entries and messages
(`model.py`; read without pydantic: `views.py`), Pi's session file (`session_file.py`), the
`SessionStorage` / `SessionCatalog` protocols and their typed errors (`base.py`), the tree over its
columns (`tree/`), sessions brought in (`imports/`). Then a folder per backend (`sqlite/`,
`postgres/`, `jsonl/`, `memory/`) and what several share (`sql/`, `indexed/`); `open_catalog`
below is the one place that chooses a backend."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the CLI reads BACKENDS before it knows it needs the storage's models)
    from pathlib import Path

    from .base import SessionCatalog

BACKENDS = ("sqlite", "jsonl", "memory", "postgres")


async def open_catalog(kind: str, home: Path, *, database_url: str | None = None) -> SessionCatalog:
    """The catalog of one store. `home` is the treechat data folder (ignored for memory and
    postgres); postgres connects to `database_url`, else $TREECHAT_DATABASE_URL."""
    if kind == "postgres":
        from .postgres import open_postgres

        return await open_postgres(database_url or os.environ.get("TREECHAT_DATABASE_URL", "").strip() or None)
    if kind == "memory":
        from .memory import MemoryCatalog

        return MemoryCatalog()
    from pathlib import Path

    if kind == "jsonl":
        from .jsonl import JsonlCatalog

        return JsonlCatalog(Path(home) / "sessions")
    if kind == "sqlite":
        from .sqlite import SqliteCatalog

        return await SqliteCatalog.open(Path(home) / "treechat.db")
    raise ValueError(f"unknown storage '{kind}'; choose one of {', '.join(BACKENDS)}")
