"""PostgreSQL storage: every session on one server that several machines share.

Needs the optional driver (`pip install 'treechat[postgres]'`: psycopg 3 with its pool);
without it, opening the store raises DriverMissingError with that one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import StorageError

if TYPE_CHECKING:
    from .catalog import PostgresCatalog

INSTALL = "pip install 'treechat[postgres]'"


class DriverMissingError(StorageError):
    """--storage postgres without psycopg installed."""


async def open_postgres(url: str | None) -> PostgresCatalog:
    """The catalog on the server `url` names (TREECHAT_DATABASE_URL or database_url)."""
    if not url:
        raise StorageError("--storage postgres needs a server: set TREECHAT_DATABASE_URL=postgresql://USER@HOST/DB "
                           "(or database_url in config.toml)")
    try:
        from .catalog import PostgresCatalog
    except ImportError as err:
        missing = getattr(err, "name", None) or "psycopg"
        raise DriverMissingError(f"PostgreSQL storage needs its driver ({missing} is not installed): {INSTALL}") from None
    return await PostgresCatalog.connect(url)
